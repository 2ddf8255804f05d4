import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const VITEST = path.resolve('node_modules/vitest/vitest.mjs');
const CONFIG = 'test/fixtures/test-command/vitest.config.ts';

/** Runs vitest as `npm test` does, on one test that passes or fails on demand; resolves its exit code. */
function runSuite(outcome: 'pass' | 'fail', databaseUrl: string | undefined): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LATCHKEY_FIXTURE_OUTCOME: outcome };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ code, output }));
  });
}

// The README's `npm test` runs on the embedded PostgreSQL; CI also runs it against the machine's.
const databases = [['the embedded PostgreSQL', undefined], ...(process.env.DATABASE_URL ? [['DATABASE_URL', process.env.DATABASE_URL] as const] : [])] as const;

describe.each(databases)('the test command on %s', { timeout: 180_000 }, (_name, databaseUrl) => {
  it('exits 0 when every test passes', async () => {
    const run = await runSuite('pass', databaseUrl);
    expect(run.code, run.output).toBe(0);
    expect(run.output).not.toMatch(/done is not a function/);
  });

  it('exits non-zero when a test fails', async () => {
    const run = await runSuite('fail', databaseUrl);
    expect(run.code, run.output).toBe(1);
  });
});
