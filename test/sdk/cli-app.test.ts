import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../runtime-sdk/index.js';
import { FakeAuthority } from './support/fake-authority.js';
import { tempDir } from './support/fake-machine.js';

const KEY = 'CL1A-PP23-4567-89AB';
let authority: FakeAuthority;
let env: Record<string, string>;

beforeAll(async () => {
  authority = await new FakeAuthority(systemClock).start();
  authority.addLicense(KEY);
  env = {
    PATH: process.env.PATH ?? '',
    LATCHKEY_SERVER_URL: authority.url,
    LATCHKEY_APP_ID: authority.appId,
    LATCHKEY_FINGERPRINT_SALT: 'salt-cli-example',
    LATCHKEY_PUBLIC_KEYS: JSON.stringify(authority.publicKeys),
    LATCHKEY_CACHE_DIR: tempDir(),
  };
});
afterAll(() => authority.close());

function runCli(stdin: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/cli-app/main.ts'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('examples/cli-app', () => {
  it('asks for the key once, then starts from the cache; refuses to run at the first start after a revocation', async () => {
    const first = await runCli(`not-a-key\n${KEY.toLowerCase()}\n`);
    expect(first.output).toContain('This app needs a license key.');
    expect(first.output).toContain('This license key is not valid.');
    expect(first.output).toContain('Notes Pro 1.0.0 is licensed. Features: {"tier":"pro"}');
    expect(first.code).toBe(0);

    const second = await runCli('');
    expect(second.output).not.toContain('License key:');
    expect(second.output).toContain('is licensed');

    authority.licenses.get(KEY)!.status = 'REVOKED';
    // The start asks the server before answering (revalidate: { blockingMs }): refused on this run.
    const refused = await runCli('');
    expect(refused.output).toContain('This license has been revoked.');
    expect(refused.output).not.toContain('is licensed');
    expect(refused.code).toBe(2);
  });
});
