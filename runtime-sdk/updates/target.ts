/**
 * What an update replaces on this host and how the new version is started again. A protected app
 * is a single executable (`<exe> <args>`) or a JavaScript bundle run by node (`node <execArgv>
 * <bundle> <args>`). The path replaced is that file, except for a macOS app (the whole `.app`, when
 * the file lives in `X.app/Contents/`) and a Windows one-folder install (the whole install folder).
 */
import path from 'node:path';
import type { AppProcess } from '../platform.js';
import { UpdateError } from './errors.js';

/** How a Windows app is installed: one executable, or a folder of files around it. */
export type WindowsLayout = 'one-file' | 'one-folder';

export const INSTALLER_OS = ['linux', 'darwin', 'win32'] as const;
export type InstallerOs = (typeof INSTALLER_OS)[number];

/**
 * - `file`: the package is the new file itself.
 * - `app-bundle`: the package is a zip of the `.app` (as `ditto -c -k --keepParent` makes it).
 * - `folder`: the package is a zip of the install folder's contents.
 */
export type Packaging = 'file' | 'app-bundle' | 'folder';

export interface AppTarget {
  os: InstallerOs;
  /** The running app's file: the single executable or the bundle. */
  appFile: string;
  kind: 'single-executable' | 'javascript-bundle';
  /** The path the update replaces. */
  replaced: string;
  packaging: Packaging;
  /** Starts the new version with this run's arguments; its paths are the same after the swap. */
  relaunch: { file: string; args: string[] };
}

export interface TargetOptions {
  /** The running app's file; default: the single executable, or the script node runs. */
  appFile?: string;
  /** Windows only. Default `one-file`. */
  windowsLayout?: WindowsLayout;
}

const isInstallerOs = (os: NodeJS.Platform): os is InstallerOs => (INSTALLER_OS as readonly string[]).includes(os);

/** The `.app` folder the file lives in (`X.app/Contents/...`), or undefined outside a bundle. */
function appBundleOf(file: string): string | undefined {
  const parts = file.split(path.sep);
  const at = parts.findIndex((part, i) => part.endsWith('.app') && parts[i + 1] === 'Contents');
  return at > 0 ? parts.slice(0, at + 1).join(path.sep) : undefined;
}

export function resolveTarget(os: NodeJS.Platform, proc: AppProcess, options: TargetOptions = {}): AppTarget {
  if (!isInstallerOs(os)) throw new UpdateError('TARGET_UNSUPPORTED', `updates are not installed on ${os}`);
  const appFile = path.resolve(proc.cwd, options.appFile ?? proc.script ?? proc.execPath);
  const kind = appFile === proc.execPath ? 'single-executable' : 'javascript-bundle';
  const relaunch = kind === 'single-executable' ? { file: appFile, args: [...proc.args] } : { file: proc.execPath, args: [...proc.execArgv, appFile, ...proc.args] };
  const bundle = os === 'darwin' ? appBundleOf(appFile) : undefined;
  if (bundle) return { os, appFile, kind, replaced: bundle, packaging: 'app-bundle', relaunch };
  if (os === 'win32' && options.windowsLayout === 'one-folder') return { os, appFile, kind, replaced: path.dirname(appFile), packaging: 'folder', relaunch };
  return { os, appFile, kind, replaced: appFile, packaging: 'file', relaunch };
}
