/**
 * What an update replaces on this host and how the new version is started again. A protected app
 * is a single executable (`<exe> <args>`) or a JavaScript bundle run by node (`node <execArgv>
 * <bundle> <args>`); an Electron app is its executable, never `argv[1]` (the user's document). The
 * path replaced is that file, except for a macOS app (the whole `.app`, when the file lives in
 * `X.app/Contents/`), a Windows one-folder install (the whole install folder; Electron's default)
 * and a Linux AppImage (the AppImage file, not the executable inside its read-only mount).
 *
 * An `appFile` the app names must be that same file: anything else (a document, node itself, a
 * library) is refused before a byte is fetched, since an update writes over the path it is given.
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
  /** The running app's own file, as a real path; default (and the only file accepted): the executable, or the script node runs. */
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

/**
 * Whether this process runs from the AppImage `$APPIMAGE` names: its executable sits in the image's
 * mount (`$APPDIR`). Both variables pass to every child of an AppImage's process, so an app started
 * from one (a terminal inside an AppImage editor) inherits another app's, which must never be replaced.
 */
function startedFromAppImage(proc: AppProcess): boolean {
  const { APPIMAGE, APPDIR } = proc.env;
  if (!APPIMAGE || !APPDIR) return false;
  const inside = path.relative(APPDIR, proc.execPath);
  return inside !== '' && !inside.startsWith('..') && !path.isAbsolute(inside);
}

/** The file that is this app: the AppImage it was started from, the executable, or the script node runs. */
function ownFile(os: InstallerOs, proc: AppProcess): string {
  if (proc.runtime === 'electron' && os === 'linux' && startedFromAppImage(proc)) return proc.env.APPIMAGE!;
  return proc.runtime === 'node' && proc.script ? proc.script : proc.execPath;
}

export function resolveTarget(os: NodeJS.Platform, proc: AppProcess, options: TargetOptions = {}): AppTarget {
  if (!isInstallerOs(os)) throw new UpdateError('TARGET_UNSUPPORTED', `updates are not installed on ${os}`);
  if (proc.runtime === 'electron-source') throw new UpdateError('TARGET_UNSUPPORTED', 'an Electron app started from its source folder has no installed file to update');
  const appFile = ownFile(os, proc);
  if (options.appFile !== undefined && path.resolve(proc.cwd, options.appFile) !== appFile) {
    throw new UpdateError('APP_FILE_REFUSED', `appFile ${options.appFile} is not this app's own file (${appFile}); it is never replaced`);
  }
  const kind = proc.runtime === 'node' ? 'javascript-bundle' : 'single-executable';
  const relaunch = kind === 'single-executable' ? { file: appFile, args: [...proc.args] } : { file: proc.execPath, args: [...proc.execArgv, appFile, ...proc.args] };
  const bundle = os === 'darwin' ? appBundleOf(appFile) : undefined;
  if (bundle) return { os, appFile, kind, replaced: bundle, packaging: 'app-bundle', relaunch };
  // An Electron app on Windows is a folder of files around its executable.
  const layout = options.windowsLayout ?? (proc.runtime === 'electron' ? 'one-folder' : 'one-file');
  if (os === 'win32' && layout === 'one-folder') return { os, appFile, kind, replaced: path.dirname(appFile), packaging: 'folder', relaunch };
  return { os, appFile, kind, replaced: appFile, packaging: 'file', relaunch };
}
