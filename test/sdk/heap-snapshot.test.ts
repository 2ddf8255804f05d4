/**
 * Issue 20 item 8: after `check()` the runtime token is in the process's heap at most once (it lives
 * in secret memory, outside the JS heap, and every copy made to use it is dropped). Counted in a
 * heap snapshot of a real app process, by the token's signature (which every copy of it contains).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../runtime-sdk/index.js';
import { FakeAuthority } from './support/fake-authority.js';
import { tempDir } from './support/fake-machine.js';

const KEY = 'HEAP-2345-6789-ABCD';
let authority: FakeAuthority;

beforeAll(async () => {
  authority = await new FakeAuthority(systemClock).start();
  authority.addLicense(KEY);
});
afterAll(() => authority.close());

function runApp(cacheDir: string, licenseKey?: string): Promise<{ snapshot: string; state: string; memoryProtection: string }> {
  const options = { appId: authority.appId, serverUrl: authority.url, publicKeys: authority.publicKeys, fingerprintSalt: 'heap-salt', appVersion: '1.0.0', cacheDir };
  const args = ['--import', 'tsx', 'test/sdk/support/heap-snapshot-app.ts', JSON.stringify(options), ...(licenseKey ? [licenseKey] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(output.trim().split('\n').at(-1)!)) : reject(new Error(`app exited ${code}: ${output}`)))),
  );
}

/** Copies of the token in the snapshot: occurrences of its signature, which no other string contains. */
function tokenCopies(snapshotFile: string, token: string): number {
  const signature = token.split('.')[2]!;
  const text = fs.readFileSync(snapshotFile, 'utf8');
  fs.rmSync(snapshotFile);
  return text.split(signature).length - 1;
}

describe('the runtime token in the heap', () => {
  it('is held at most once after activate(), refresh() and check(), and after a start from the cache', async () => {
    const cacheDir = tempDir();
    const online = await runApp(cacheDir, KEY);
    expect(online).toMatchObject({ state: 'valid', memoryProtection: 'sodium' });
    expect(tokenCopies(online.snapshot, authority.issuedTokens.at(-1)!)).toBeLessThanOrEqual(1);

    authority.down = true;
    try {
      const cached = await runApp(cacheDir);
      expect(cached).toMatchObject({ state: 'valid', memoryProtection: 'sodium' });
      expect(tokenCopies(cached.snapshot, authority.issuedTokens.at(-1)!)).toBeLessThanOrEqual(1);
    } finally {
      authority.down = false;
    }
  });
});
