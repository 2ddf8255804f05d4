/**
 * The one seam for what differs between operating systems: where per-user app data lives, how the
 * machine's OS-level identity is read, and the running process the updater replaces and relaunches.
 * Tests pass their own platform to run every branch on Linux.
 */
import os from 'node:os';
import path from 'node:path';
import { appProcessOf } from './app-process.js';
import { readMachineId } from './machine-id.js';

export interface Platform {
  /** `linux`, `darwin`, `win32`, ... as `process.platform` says. */
  readonly name: NodeJS.Platform;
  readonly arch: string;
  /** The per-user folder where this app's license cache lives. */
  appDataDir(appId: string): string;
  /** The OS installation id (machine-id, IOPlatformUUID, MachineGuid), or undefined when unreadable. */
  machineId(): Promise<string | undefined>;
  /** A CPU model string that is cheap to read (no child process). */
  cpuModel(): string;
  /** This process, as the updater sees it. */
  readonly process: AppProcess;
}

/**
 * What runs the app: `node` with a script, a Node single executable, or Electron. `electron-source`
 * is Electron started on an app's source folder (`electron .`, `process.defaultApp`): a developer's
 * run, whose executable belongs to the electron package, not to the app.
 */
export type AppRuntime = 'node' | 'single-executable' | 'electron' | 'electron-source';

/** What the updater needs of the running app: how it was started, and how to start again and leave. */
export interface AppProcess {
  readonly pid: number;
  readonly runtime: AppRuntime;
  /** The executable running: a single executable, Electron's, or `node` running a script. */
  readonly execPath: string;
  /** Node's own flags (`--import ...`), repeated when a script is relaunched. */
  readonly execArgv: readonly string[];
  /** The script `node` runs (`argv[1]`, its real path), or null in a single executable and in Electron (whose `argv[1]` is the user's). */
  readonly script: string | null;
  /** The user's arguments (a document to open, flags): what follows the executable (or `node` and the script). */
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** The working directory the app was started in: a relaunch keeps it, so relative arguments still resolve. */
  readonly cwd: string;
  /** Starts a program that outlives this process, on this process's stdio; resolves once it runs. */
  spawnDetached(file: string, args: readonly string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }): Promise<void>;
  /**
   * Runs a program in this process's place: same stdio and terminal (foreground), this process
   * waiting, its event loop held; answers the program's exit code (128 + n after signal n).
   * Rejects only when it cannot be started.
   */
  runInForeground(file: string, args: readonly string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }): Promise<number>;
  exit(code: number): void;
}

const VENDOR_DIR = 'Latchkey';

export function appDataDirFor(name: NodeJS.Platform, env: NodeJS.ProcessEnv, home: string, appId: string): string {
  // One folder name, never a path: no separators, and not `.` or `..`.
  const safeAppId = appId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+$/, '_');
  if (name === 'win32') return path.win32.join(env.LOCALAPPDATA ?? path.win32.join(home, 'AppData', 'Local'), VENDOR_DIR, safeAppId);
  if (name === 'darwin') return path.posix.join(home, 'Library', 'Application Support', VENDOR_DIR, safeAppId);
  return path.posix.join(env.XDG_DATA_HOME || path.posix.join(home, '.local', 'share'), VENDOR_DIR.toLowerCase(), safeAppId);
}

const OS_LABELS: Partial<Record<NodeJS.Platform, string>> = { win32: 'win', darwin: 'mac', linux: 'linux' };

/** The authority's platform label (`linux-x64`, `mac-arm64`, ...), or undefined for one it does not list. */
export function platformLabel(platform: Pick<Platform, 'name' | 'arch'>): string | undefined {
  const os = OS_LABELS[platform.name];
  return os && (platform.arch === 'x64' || platform.arch === 'arm64') ? `${os}-${platform.arch}` : undefined;
}

export const hostPlatform: Platform = {
  name: process.platform,
  arch: process.arch,
  appDataDir: (appId) => appDataDirFor(process.platform, process.env, os.homedir(), appId),
  machineId: () => readMachineId(process.platform),
  cpuModel: () => os.cpus()[0]?.model.trim() ?? '',
  process: appProcessOf(process),
};
