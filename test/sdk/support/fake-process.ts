import type { AppProcess } from '../../../runtime-sdk/platform.js';

export interface Spawned {
  file: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv | undefined;
  cwd: string | undefined;
}

/** The running app as a test describes it; records what the updater starts and when it exits. */
export interface FakeProcess extends AppProcess {
  readonly spawned: Spawned[];
  readonly exits: number[];
  /** Makes the next spawn fail, as when the new file cannot be executed. */
  failSpawn: boolean;
}

export function fakeProcess(overrides: Partial<Pick<AppProcess, 'pid' | 'execPath' | 'execArgv' | 'script' | 'args' | 'env' | 'cwd' | 'interactive'>> = {}): FakeProcess {
  const spawned: Spawned[] = [];
  const exits: number[] = [];
  const fake: FakeProcess = {
    pid: 4242,
    execPath: '/usr/bin/node',
    execArgv: [],
    script: null,
    args: [],
    env: {},
    cwd: '/home/ana',
    interactive: false,
    ...overrides,
    spawned,
    exits,
    failSpawn: false,
    async spawnDetached(file, args, options) {
      if (fake.failSpawn) throw Object.assign(new Error(`spawn ${file} EACCES`), { code: 'EACCES' });
      spawned.push({ file, args, env: options?.env, cwd: options?.cwd });
    },
    exit: (code) => void exits.push(code),
  };
  return fake;
}
