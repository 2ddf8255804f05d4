/**
 * The one seam for what differs between operating systems: where per-user app data lives, how the
 * machine's OS-level identity is read, and the running process the updater replaces and relaunches.
 * Tests pass their own platform to run every branch on Linux.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { isatty } from 'node:tty';
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

/** What the updater needs of the running app: how it was started, and how to start again and leave. */
export interface AppProcess {
  readonly pid: number;
  /** The executable running: a single executable, or `node` running a script. */
  readonly execPath: string;
  /** Node's own flags (`--import ...`), repeated when a script is relaunched. */
  readonly execArgv: readonly string[];
  /** The script `node` runs (`argv[1]`), or null inside a single executable. */
  readonly script: string | null;
  /** The user's arguments: what follows the executable (or `node` and the script). */
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** The working directory the app was started in: a relaunch keeps it, so relative arguments still resolve. */
  readonly cwd: string;
  /** Whether someone can answer a question typed at the terminal. */
  readonly interactive: boolean;
  /** Starts a program that outlives this process, on this process's stdio; resolves once it runs. */
  spawnDetached(file: string, args: readonly string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }): Promise<void>;
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

/**
 * Whether this is a single executable, whose script is the executable itself. `node:sea` answers
 * (through getBuiltinModule, which also works in the CommonJS bundle a single executable runs);
 * a single executable repeats its own path in argv[1] otherwise.
 */
function isSingleExecutable(): boolean {
  const sea = process.getBuiltinModule?.('node:sea') as { isSea?: () => boolean } | undefined;
  return sea?.isSea?.() ?? process.argv[1] === process.execPath;
}

const hostProcess: AppProcess = {
  pid: process.pid,
  execPath: process.execPath,
  execArgv: process.execArgv,
  script: isSingleExecutable() ? null : (process.argv[1] ?? null),
  // A single executable's argv repeats the executable in argv[1]; a script's argv[1] is the script.
  args: process.argv.slice(2),
  env: process.env,
  cwd: process.cwd(),
  // isatty on the descriptors: touching process.stdin here would create its stream in every app.
  interactive: isatty(0) && isatty(2),
  spawnDetached: (file, args, options = {}) =>
    new Promise((resolve, reject) => {
      // Its own session on POSIX, so it survives our exit and a hangup of our process group. Windows
      // keeps the console shared instead (`detached` would open a new console window); a child
      // there is not ended with its parent anyway.
      const child = spawn(file, args, { detached: process.platform !== 'win32', stdio: 'inherit', env: options.env ?? process.env, cwd: options.cwd ?? process.cwd() });
      child.once('error', reject);
      child.once('spawn', () => {
        child.unref();
        resolve();
      });
    }),
  exit: (code) => process.exit(code),
};

export const hostPlatform: Platform = {
  name: process.platform,
  arch: process.arch,
  appDataDir: (appId) => appDataDirFor(process.platform, process.env, os.homedir(), appId),
  machineId: () => readMachineId(process.platform),
  cpuModel: () => os.cpus()[0]?.model.trim() ?? '',
  process: hostProcess,
};
