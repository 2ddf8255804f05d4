import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** The app from its TypeScript source; the bench runs a bundle of it instead (`program`). */
const FROM_SOURCE = ['--import', 'tsx', 'test/sdk/support/network-app.ts'];

export interface AppRun {
  action: 'activate' | 'refresh' | 'start';
  options: Record<string, unknown>;
  key?: string;
  dispose?: boolean;
  settleMs?: number;
}

export interface AppProcess {
  child: ChildProcessWithoutNullStreams;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves when a line of stdout equals `line`, with the time it arrived (performance.now()). */
  line(line: string): Promise<number>;
  /** The exit code and when it came, or `still running` when `withinMs` passed first (the child is then killed). */
  exit(withinMs: number): Promise<{ code: number | null; at: number } | 'still running'>;
}

/** The network test app (network-app.ts) in a child process, with only the environment given. */
export function startNetworkApp(run: AppRun, env: Record<string, string> = {}, program: string[] = FROM_SOURCE): AppProcess {
  const child = spawn(process.execPath, [...program, JSON.stringify(run)], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  let stdout = '';
  let stderr = '';
  const waiters: { line: string; resolve: (at: number) => void }[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    const at = performance.now();
    stdout += chunk.toString();
    const lines = stdout.split('\n');
    for (const waiter of waiters.splice(0)) {
      if (lines.includes(waiter.line)) waiter.resolve(at);
      else waiters.push(waiter);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: performance.now() })));
  return {
    child,
    output: () => stdout + stderr,
    line: (line) =>
      new Promise((resolve, reject) => {
        if (stdout.split('\n').includes(line)) return resolve(performance.now());
        waiters.push({ line, resolve });
        void exited.then(() => reject(new Error(`the app exited without printing "${line}": ${stdout}${stderr}`)));
      }),
    async exit(withinMs) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), withinMs)));
      const result = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (result === 'still running') child.kill('SIGKILL');
      return result;
    },
  };
}

/** The app's output, once it exited on its own with code 0. */
export async function runNetworkApp(run: AppRun, env: Record<string, string> = {}): Promise<string> {
  const app = startNetworkApp(run, env);
  const result = await app.exit(20_000);
  if (result === 'still running' || result.code !== 0) throw new Error(`the app ${result === 'still running' ? 'did not exit' : `exited with ${result.code}`}: ${app.output()}`);
  return app.output();
}
