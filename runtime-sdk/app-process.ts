/**
 * The running app as the updater sees it, read from a `process` object: what runs it (node and a
 * script, a single executable, Electron), the user's arguments, and how to start a new version.
 *
 * Electron's `argv[1]` is whatever the app was opened with (a document, a URL), never a script:
 * taking it for the app's file is how an update once overwrote a user's document. So in Electron
 * the app is its executable (`execPath`), and every argument after it is the user's.
 */
import { realpathSync } from 'node:fs';
import { constants } from 'node:os';
import type { AppProcess, AppRuntime } from './platform.js';

/** The parts of Node's (or Electron's) `process` read here; tests pass one shaped like Electron's. */
export interface RunningProcess {
  readonly pid: number;
  readonly platform: NodeJS.Platform;
  readonly execPath: string;
  readonly execArgv: string[];
  readonly argv: string[];
  readonly env: NodeJS.ProcessEnv;
  /** `electron` is set in Electron's main process. */
  readonly versions: Readonly<Record<string, string | undefined>>;
  /** Electron: true when started as `electron <source folder>`. */
  readonly defaultApp?: boolean;
  cwd(): string;
  getBuiltinModule?(id: string): unknown;
  exit(code?: number): void;
}

/**
 * A single executable's script is the executable itself. `node:sea` answers (through
 * getBuiltinModule, which also works in the CommonJS bundle a single executable runs); a single
 * executable repeats its own path in argv[1] otherwise.
 */
function isSingleExecutable(proc: RunningProcess): boolean {
  const sea = proc.getBuiltinModule?.('node:sea') as { isSea?: () => boolean } | undefined;
  return sea?.isSea?.() ?? proc.argv[1] === proc.execPath;
}

function runtimeOf(proc: RunningProcess): AppRuntime {
  if (proc.versions.electron) return proc.defaultApp ? 'electron-source' : 'electron';
  return isSingleExecutable(proc) ? 'single-executable' : 'node';
}

/** The script's real path, as Node resolved the main module: an app naming its own file (import.meta.url) names this one. */
function realScript(script: string | undefined): string | null {
  if (script === undefined) return null;
  try {
    return realpathSync(script);
  } catch {
    return script;
  }
}

/** The exit code a shell reports for a program ended by `signal`. */
const signalExitCode = (signal: NodeJS.Signals) => 128 + (constants.signals[signal] ?? 0);

export function appProcessOf(proc: RunningProcess): AppProcess {
  const runtime = runtimeOf(proc);
  // Packaged Electron and a single executable: argv[0] is the app. node: argv[1] is the script.
  // `electron <source>`: argv[1] is the source folder.
  const firstUserArg = runtime === 'electron' ? 1 : 2;
  const cwd = proc.cwd();
  return {
    pid: proc.pid,
    runtime,
    execPath: proc.execPath,
    execArgv: proc.execArgv,
    script: runtime === 'node' ? realScript(proc.argv[1]) : null,
    args: proc.argv.slice(firstUserArg),
    env: proc.env,
    cwd,
    spawnDetached: (file, args, options = {}) =>
      new Promise((resolve, reject) => {
        // Its own session on POSIX, so it survives our exit and a hangup of our process group. Windows
        // keeps the console shared instead (`detached` would open a new console window); a child
        // there is not ended with its parent anyway.
        // child_process loads on first use: only a relaunch needs it.
        const { spawn } = process.getBuiltinModule('node:child_process');
        const child = spawn(file, args, { detached: proc.platform !== 'win32', stdio: 'inherit', env: options.env ?? proc.env, cwd: options.cwd ?? cwd });
        child.once('error', reject);
        child.once('spawn', () => {
          child.unref();
          resolve();
        });
      }),
    async runInForeground(file, args, options = {}) {
      // Ctrl-C and Ctrl-\ go to the whole foreground group: the new version decides what they do,
      // and this process, which only waits, must not end first and hand the terminal back to the shell.
      const ignore = () => undefined;
      const signals: NodeJS.Signals[] = proc.platform === 'win32' ? ['SIGINT'] : ['SIGINT', 'SIGQUIT'];
      for (const signal of signals) process.on(signal, ignore);
      // Synchronous on purpose: the old version's event loop is held, so nothing of it runs, reads
      // the terminal or writes to it while the new one does.
      const { spawnSync } = process.getBuiltinModule('node:child_process');
      const result = spawnSync(file, args, { stdio: 'inherit', env: options.env ?? proc.env, cwd: options.cwd ?? cwd });
      if (result.error) {
        for (const signal of signals) process.off(signal, ignore);
        throw result.error;
      }
      return result.status ?? signalExitCode(result.signal ?? 'SIGTERM');
    },
    exit: (code) => proc.exit(code),
  };
}
