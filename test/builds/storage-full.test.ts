import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { startTestServer } from '../support/server.js';
import { owner, settled, storedFiles, upload } from './support.js';

// A full disk, for real: the server's storage is a 1 MiB tmpfs. Mounting needs root (CI runs as
// root); elsewhere the test says so and skips.

const STORAGE_BYTES = 1024 * 1024;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-full-disk-'));
const storageDir = path.join(dataDir, 'storage');
fs.mkdirSync(storageDir, { mode: 0o700 });
let mounted = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${STORAGE_BYTES},mode=0700`, 'tmpfs', storageDir], { stdio: 'pipe' });
  mounted = true;
} catch (err) {
  console.warn(`storage-full tests skipped: cannot mount a tmpfs (${(err as Error).message.split('\n')[0]})`);
}

const server = mounted ? await startTestServer({ dataDir }) : undefined;
afterAll(async () => {
  await server?.close();
  if (mounted) execFileSync('umount', [storageDir]);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!mounted)('uploads onto a full disk', () => {
  it('answer 507 INSUFFICIENT_STORAGE with the reason, keep nothing half-written, and record no build', async () => {
    const o = await owner(server!);
    const big = new Uint8Array(3 * STORAGE_BYTES).fill(7);
    const res = await upload(o, { file: { data: big, name: 'tool.bin' }, fields: { platform: 'cross_platform' } });
    expectError(res, 507, 'INSUFFICIENT_STORAGE');
    expect(res.body.detail).toMatch(/no room left.*nothing of it was kept/);
    expect(storedFiles(server!)).toEqual([]);
    const builds = await o.call('GET', `/v1/apps/${o.app.id}/builds`, { token: o.dev.accessToken });
    expect(builds.headers.get('x-total-count')).toBe('0');
  });

  it('leave the room they took: an upload that fits is stored and processed afterwards', async () => {
    const o = await owner(server!);
    const small = new Uint8Array(STORAGE_BYTES / 4).fill(1);
    const res = await upload(o, { file: { data: small, name: 'tool.bin' }, fields: { platform: 'cross_platform' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await settled(o, res.body.id)).toMatchObject({ status: 'READY', protected_size_bytes: small.length });
  });
});
