import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { downloadPackage, verifiedPath, type DownloadOptions, type PackageRef } from '../../../runtime-sdk/updates/download.js';
import { tempDir } from '../support/fake-machine.js';
import { PackageServer } from '../support/package-server.js';
import { sha256 } from '../support/updater-harness.js';

const PACKAGE = randomBytes(3 * 1024 * 1024 + 17);
let server: PackageServer;
let cacheDir: string;
let ref: PackageRef;
const waits: number[] = [];

const options = (): DownloadOptions => ({
  cacheDir,
  idleTimeoutMs: 1_000,
  retries: 2,
  retryBaseDelayMs: 100,
  userAgent: 'latchkey-test',
  sleep: async (ms) => void waits.push(ms),
});

beforeEach(async () => {
  server = await new PackageServer().start();
  server.bytes = PACKAGE;
  cacheDir = path.join(tempDir('latchkey-cache-'), 'updates');
  ref = { url: server.url, sha256: sha256(PACKAGE), length: PACKAGE.length };
  waits.length = 0;
});
afterEach(async () => {
  await server.close();
  fs.rmSync(path.dirname(cacheDir), { recursive: true, force: true });
});

const cached = () => (fs.existsSync(cacheDir) ? fs.readdirSync(cacheDir) : []);
/** A partial download an earlier run (pid 1234) left. */
const leftPartial = () => path.join(cacheDir, `${ref.sha256}.1234.0a0b0c.partial`);

describe('download', () => {
  it('streams the package into the cache, named by its hash once verified, readable by its owner only', async () => {
    const file = await downloadPackage(ref, options());
    expect(file).toBe(verifiedPath(cacheDir, ref));
    expect(fs.readFileSync(file).equals(PACKAGE)).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(cached()).toEqual([path.basename(file)]);
    expect(server.ranges).toEqual([undefined]);
  });

  it('writes under a name of its own and never under the verified name before the hash matched', async () => {
    // A partial file an earlier run left, and a first attempt answered 503: between the two
    // attempts the cache holds that file, claimed under this download's own name.
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(leftPartial(), PACKAGE.subarray(0, 12_345));
    server.failures.push(503);
    let between: string[] = [];
    await downloadPackage(ref, { ...options(), sleep: async () => void (between = cached()) });
    expect(between).toEqual([expect.stringMatching(new RegExp(`^${ref.sha256}\\.${process.pid}\\.[0-9a-f]{12}\\.partial$`))]);
    expect(cached()).toEqual([path.basename(verifiedPath(cacheDir, ref))]);
  });

  it('resumes a cut-off download with a Range request, after re-hashing what is on disk', async () => {
    server.cutAfter = 1_000_000;
    const file = await downloadPackage(ref, options());
    expect(fs.readFileSync(file).equals(PACKAGE)).toBe(true);
    expect(server.ranges).toHaveLength(2);
    // Resumed from what reached the disk: bytes received but still buffered when the connection
    // broke are dropped, so on a loaded machine that may be none (no Range then).
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(server.ranges[1] ?? 'bytes=0-')![1]);
    expect(resumedAt).toBeLessThanOrEqual(1_000_000);
    expect(waits).toEqual([100]);
  });

  it('hashes on a resume exactly the bytes on disk, a write still landing after the cut included', async () => {
    // Many cut-off attempts in a row: each resume hashes what the last one left once its file is closed.
    server.bytes = PACKAGE;
    const attempts = 6;
    let cuts = 0;
    const cutEach = async () => {
      if (++cuts < attempts) server.cutAfter = 200_000 + cuts * 300_000;
    };
    server.cutAfter = 200_000;
    const file = await downloadPackage(ref, { ...options(), retries: attempts, sleep: cutEach });
    expect(fs.readFileSync(file).equals(PACKAGE)).toBe(true);
  });

  it('resumes a partial file left by an earlier run', async () => {
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(leftPartial(), PACKAGE.subarray(0, 12_345));
    await downloadPackage(ref, options());
    expect(server.ranges).toEqual(['bytes=12345-']);
    expect(cached()).toEqual([path.basename(verifiedPath(cacheDir, ref))]);
  });

  it('starts over when the server ignores the Range', async () => {
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(leftPartial(), PACKAGE.subarray(0, 12_345));
    server.ignoreRange = true;
    const file = await downloadPackage(ref, options());
    expect(server.ranges).toEqual(['bytes=12345-']);
    expect(fs.readFileSync(file).equals(PACKAGE)).toBe(true);
  });

  it('uses a complete file already in the cache without asking the server', async () => {
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(verifiedPath(cacheDir, ref), PACKAGE);
    await downloadPackage(ref, options());
    expect(server.ranges).toEqual([]);
  });

  it('fetches again over a cached package that no longer hashes right', async () => {
    fs.mkdirSync(cacheDir, { recursive: true });
    const altered = Buffer.from(PACKAGE);
    altered[0]! ^= 1;
    fs.writeFileSync(verifiedPath(cacheDir, ref), altered);
    const file = await downloadPackage(ref, options());
    expect(server.ranges).toEqual([undefined]);
    expect(fs.readFileSync(file).equals(PACKAGE)).toBe(true);
  });

  it('retries a 5xx, then gives up after the bounded number of attempts and keeps the partial file', async () => {
    server.failures.push(503, 502, 503);
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'DOWNLOAD_FAILED', retryable: true });
    expect(server.ranges).toHaveLength(3);
    expect(waits).toEqual([100, 200]);
  });

  it('ends an attempt that receives nothing for the idle timeout', async () => {
    server.stall = true;
    await expect(downloadPackage(ref, { ...options(), idleTimeoutMs: 150, retries: 1 })).rejects.toMatchObject({ code: 'DOWNLOAD_FAILED' });
    expect(server.ranges).toHaveLength(2);
  });

  it('does not retry an answer that will not change (404)', async () => {
    server.failures.push(404);
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'DOWNLOAD_FAILED', message: expect.stringContaining('404') });
    expect(server.ranges).toHaveLength(1);
  });

  it('removes partial downloads of packages no longer offered', async () => {
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(path.join(cacheDir, `${'0'.repeat(64)}.download`), 'stale');
    fs.writeFileSync(path.join(cacheDir, `${'1'.repeat(64)}.99.abcdef.partial`), 'stale');
    fs.writeFileSync(path.join(cacheDir, `${'2'.repeat(64)}.package`), 'stale');
    await downloadPackage(ref, options());
    expect(cached()).toEqual([path.basename(verifiedPath(cacheDir, ref))]);
  });
});

describe('the bytes must be the signed ones', () => {
  it('refuses a hash mismatch and deletes the download', async () => {
    await expect(downloadPackage({ ...ref, sha256: 'e'.repeat(64) }, options())).rejects.toMatchObject({ code: 'PACKAGE_REJECTED' });
    expect(cached()).toEqual([]);
  });

  it('refuses a server declaring more than the signed length before reading the body', async () => {
    server.extra = Buffer.from('trailing bytes');
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'PACKAGE_REJECTED', message: expect.stringContaining('not the signed') });
    expect(cached()).toEqual([]);
  });

  it('cuts off an undeclared body as soon as it passes the signed length', async () => {
    server.extra = Buffer.from('trailing bytes');
    server.undeclared = true;
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'PACKAGE_REJECTED', message: expect.stringContaining('more than the signed') });
    expect(cached()).toEqual([]);
  });

  it('cuts off endless data', async () => {
    server.endless = true;
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'PACKAGE_REJECTED' });
    expect(cached()).toEqual([]);
  });

  it('refuses a body declared shorter than the signed length', async () => {
    server.bytes = PACKAGE.subarray(0, PACKAGE.length - 1);
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'PACKAGE_REJECTED' });
    expect(cached()).toEqual([]);
  });

  it('refuses an undeclared short body once the server has nothing more (416)', async () => {
    server.bytes = PACKAGE.subarray(0, PACKAGE.length - 1);
    server.undeclared = true;
    await expect(downloadPackage(ref, options())).rejects.toMatchObject({ code: 'PACKAGE_REJECTED', message: expect.stringContaining('no bytes past') });
    expect(server.ranges).toEqual([undefined, `bytes=${PACKAGE.length - 1}-`]);
    expect(cached()).toEqual([]);
  });
});
