import type { AppProcess } from '../../../runtime-sdk/platform.js';

export interface Spawned {
  file: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv | undefined;
  cwd: string | undefined;
  /** Started in this process's place (it waited), or detached (it exited at once). */
  mode: 'foreground' | 'detached';
}

/** The running app as a test describes it; records what the updater starts and when it exits. */
export interface FakeProcess extends AppProcess {
  readonly spawned: Spawned[];
  readonly exits: number[];
  /** Makes the next spawn fail, as when the new file cannot be executed. */
  failSpawn: boolean;
  /** What a program run in the foreground exits with. */
  foregroundExitCode: number;
}

type Described = Partial<Pick<AppProcess, 'pid' | 'runtime' | 'execPath' | 'execArgv' | 'script' | 'args' | 'env' | 'cwd'>>;

/** A fake of `described`; `runtime` defaults to node with a script, else a single executable. */
export function fakeProcess(overrides: Described = {}): FakeProcess {
  return recordingProcess({
    pid: 4242,
    runtime: overrides.script ? 'node' : 'single-executable',
    execPath: '/usr/bin/node',
    execArgv: [],
    script: null,
    args: [],
    env: {},
    cwd: '/home/ana',
    ...overrides,
  });
}

/** `described` (a real `appProcessOf(...)` too), recording what it starts and its exits instead of doing them. */
export function recordingProcess(described: Required<Described>): FakeProcess {
  const spawned: Spawned[] = [];
  const exits: number[] = [];
  const record = (mode: Spawned['mode'], file: string, args: readonly string[], options?: { env?: NodeJS.ProcessEnv; cwd?: string }) => {
    if (fake.failSpawn) throw Object.assign(new Error(`spawn ${file} EACCES`), { code: 'EACCES' });
    spawned.push({ file, args, env: options?.env, cwd: options?.cwd, mode });
  };
  const fake: FakeProcess = {
    pid: described.pid,
    runtime: described.runtime,
    execPath: described.execPath,
    execArgv: described.execArgv,
    script: described.script,
    args: described.args,
    env: described.env,
    cwd: described.cwd,
    spawned,
    exits,
    failSpawn: false,
    foregroundExitCode: 0,
    async spawnDetached(file, args, options) {
      record('detached', file, args, options);
    },
    async runInForeground(file, args, options) {
      record('foreground', file, args, options);
      return fake.foregroundExitCode;
    },
    exit: (code) => void exits.push(code),
  };
  return fake;
}
