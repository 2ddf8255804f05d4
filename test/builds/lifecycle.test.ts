import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { expectError } from '../support/assertions.js';
import { peFile } from '../support/executables.js';
import { createApp, createLicense, randomFingerprint, setPlan } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';
import { filesOf, owner, settled, storedFiles, upload, uploadBuild, type Owner } from './support.js';

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer();
  o = await owner(server);
});
afterAll(() => server.close());

const buildPath = (owner: Owner, id: string, rest = '') => `/v1/apps/${owner.app.id}/builds/${id}${rest}`;
const ready = async (owner: Owner, name = 'tool.bin', data: string | Uint8Array<ArrayBuffer> = 'payload', platform = 'cross_platform') =>
  settled(owner, (await uploadBuild(owner, { data, name }, { platform })).id);
const jobCount = async (s: TestServer) => Number((await s.database.db('jobs').count<{ count: number }[]>('* as count'))[0]!.count);
const failed = async (owner: Owner) => settled(owner, (await uploadBuild(owner, { data: new Uint8Array(EICAR_SIGNATURE), name: 'x.com' })).id);

describe('release', () => {
  it('POST releases a READY build and DELETE withdraws it; both are idempotent', async () => {
    const build = await ready(o);
    for (let i = 0; i < 2; i++) {
      const res = await o.call('POST', buildPath(o, build.id, '/release'), { token: o.dev.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: build.id, released: true });
    }
    expect((await o.call('GET', buildPath(o, build.id), { token: o.dev.accessToken })).body.released).toBe(true);
    for (let i = 0; i < 2; i++) {
      const res = await o.call('DELETE', buildPath(o, build.id, '/release'), { token: o.dev.accessToken });
      expect(res.status).toBe(200);
      expect(res.body.released).toBe(false);
    }
  });

  it('refuses a build that is not READY with 409, and a missing one with 404', async () => {
    const bad = await failed(o);
    expectError(await o.call('POST', buildPath(o, bad.id, '/release'), { token: o.dev.accessToken }), 409, 'BUILD_NOT_READY');
    expect((await o.call('DELETE', buildPath(o, bad.id, '/release'), { token: o.dev.accessToken })).status).toBe(200);
    expectError(await o.call('POST', buildPath(o, 'bld_missing', '/release'), { token: o.dev.accessToken }), 404, 'BUILD_NOT_FOUND');
  });
});

describe('PUT .../signed-package', () => {
  const put = (owner: Owner, id: string, file?: { data: string | Uint8Array<ArrayBuffer>; name: string }, fileField = 'package') =>
    upload(owner, { method: 'PUT', path: buildPath(owner, id, '/signed-package'), file, fileField });

  it("replaces what customers download, with the signed package's own hash and size", async () => {
    const build = await ready(o, 'Notes.exe', new Uint8Array(peFile({ program: 'unsigned binary' })), 'win-x64');
    const signed = new Uint8Array(peFile({ program: 'signed binary', signature: 'an Authenticode signature' }));
    const res = await put(o, build.id, { data: signed, name: 'Notes-signed.exe' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: build.id,
      status: 'READY',
      package_name: 'Notes-signed.exe',
      protected_size_bytes: signed.length,
      artifact_sha256: build.artifact_sha256,
      artifact_size_bytes: build.artifact_size_bytes,
    });
    expect(res.body.sha256).not.toBe(build.sha256);
    expect(Date.parse(res.body.signed_package_at)).toBeGreaterThan(0);
    const link = await o.call('GET', buildPath(o, build.id, '/download'), { token: o.dev.accessToken });
    const download = await fetch(link.body.download_url);
    expect(download.headers.get('etag')).toBe(`"${res.body.sha256}"`);
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(signed))).toBe(true);

    // Replaced again: the previous signed package is removed, the original upload stays.
    const again = await put(o, build.id, { data: new Uint8Array(peFile({ signature: 'signed twice' })), name: 'Notes.exe' });
    expect(again.status).toBe(200);
    const files = filesOf(server, build.id);
    expect(files).toHaveLength(2);
    expect(files).toContain(`apps/${o.app.id}/builds/${build.id}/artifact`);
  });

  it('refuses an infected package with 422 and keeps the current one', async () => {
    const build = await ready(o, 'x.exe', 'payload', 'win-x64');
    const before = filesOf(server, build.id);
    const res = await put(o, build.id, { data: new Uint8Array(peFile({ program: EICAR_SIGNATURE.toString('latin1'), signature: 'pkcs7' })), name: 'x.exe' });
    expectError(res, 422, 'PACKAGE_REJECTED');
    expect(res.body.detail).toContain('EICAR');
    expect(filesOf(server, build.id)).toEqual(before);
    expect((await o.call('GET', buildPath(o, build.id), { token: o.dev.accessToken })).body.sha256).toBe(build.sha256);
  });

  it('refuses a build that is not READY, a missing file and a missing build', async () => {
    const staged = () => storedFiles(server).filter((f) => f.startsWith('.staging'));
    const bad = await failed(o);
    expectError(await put(o, bad.id, { data: 'x', name: 'x.exe' }), 409, 'BUILD_NOT_READY');
    const build = await ready(o, 'x.exe', 'payload', 'win-x64');
    expectError(await put(o, build.id), 400, 'VALIDATION_FAILED');
    expectError(await put(o, build.id, { data: 'x', name: 'x.exe' }, 'artifact'), 400, 'VALIDATION_FAILED');
    expectError(await put(o, 'bld_missing', { data: 'x', name: 'x.exe' }), 404, 'BUILD_NOT_FOUND');
    expect(staged()).toEqual([]);
  });
});

describe('DELETE /v1/apps/{app_id}/builds/{build_id}', () => {
  it('deletes the build and its files', async () => {
    const build = await ready(o);
    expect(filesOf(server, build.id).length).toBeGreaterThan(0);
    const res = await o.call('DELETE', buildPath(o, build.id), { token: o.dev.accessToken });
    expect(res.status).toBe(204);
    expect(filesOf(server, build.id)).toEqual([]);
    expectError(await o.call('GET', buildPath(o, build.id), { token: o.dev.accessToken }), 404, 'BUILD_NOT_FOUND');
    expectError(await o.call('DELETE', buildPath(o, build.id), { token: o.dev.accessToken }), 404, 'BUILD_NOT_FOUND');
  });

  it('happens with the app too: deleting an app removes its builds and their files', async () => {
    const other = { ...o, app: await createApp(o.call, o.dev) };
    const build = await ready(other);
    expect((await o.call('DELETE', `/v1/apps/${other.app.id}`, { token: o.dev.accessToken })).status).toBe(204);
    expect(filesOf(server, build.id)).toEqual([]);
    expect(storedFiles(server).some((f) => f.startsWith(`apps/${other.app.id}/`))).toBe(false);
  });
});

describe('activation with a build id', () => {
  it("accepts a build of the license's app and refuses others with 404", async () => {
    await setPlan(o.call, server.adminToken, o.dev.id, 'pro');
    const { license_key } = await createLicense(o.call, o.dev, { app_id: o.app.id });
    const build = await ready(o);
    const other = { ...o, app: await createApp(o.call, o.dev) };
    const foreign = await ready(other);
    const activate = (build_id: string) => o.call('POST', '/v1/licenses/activate', { body: { license_key, device_fingerprint: randomFingerprint(), build_id } });
    expect((await activate(build.id)).status).toBe(200);
    expectError(await activate(foreign.id), 404, 'BUILD_NOT_FOUND');
    expectError(await activate('bld_missing'), 404, 'BUILD_NOT_FOUND');
  });
});

describe('the protection job', () => {
  it('is picked up again when its runner died mid-job, and given up after its attempts', async () => {
    // Uploads reach a server that runs no jobs; a crash is then staged in the jobs table, as a
    // runner that died mid-job leaves it: claimed, lease lapsed, build PROCESSING.
    const front = await startTestServer({ env: { LATCHKEY_RUN_JOBS: 'false' } });
    let worker: TestServer | undefined;
    try {
      const f = await owner(front);
      const crashedOnce = await uploadBuild(f, { data: 'console.log(1)\n', name: 'main.js' });
      const crashedAlways = await uploadBuild(f, { data: 'console.log(2)\n', name: 'main.js' });
      const db = front.database.db;
      const stage = async (buildId: string, attempts: number) => {
        await db('jobs')
          .whereRaw(`payload->>'build_id' = ?`, [buildId])
          .update({ attempts, locked_by: 'runner_that_died', locked_until: db.raw(`now() - interval '1 second'`) });
        await db('builds').where({ id: buildId }).update({ status: 'PROCESSING' });
      };
      await stage(crashedOnce.id, 1);
      await stage(crashedAlways.id, 3);

      worker = await startTestServer({ database: front.database, dataDir: front.dataDir });
      expect(await settled(f, crashedOnce.id)).toMatchObject({ status: 'READY', scan_status: 'CLEAN', package_format: 'javascript_bundle' });
      expect(await settled(f, crashedAlways.id)).toMatchObject({
        status: 'FAILED',
        failure_reason: 'processing failed: processing was interrupted 3 times',
      });
      // The build is marked FAILED before the runner deletes its job's row.
      await eventually('the job to be gone', async () => (await jobCount(front)) === 0);
      expect(filesOf(front, crashedAlways.id)).toEqual([]);
    } finally {
      await worker?.close();
      await front.close();
    }
  });

  it('is not run for a build deleted while queued', async () => {
    const front = await startTestServer({ env: { LATCHKEY_RUN_JOBS: 'false' } });
    let worker: TestServer | undefined;
    try {
      const f = await owner(front);
      const build = await uploadBuild(f, { data: 'console.log(1)\n', name: 'main.js' });
      expect((await f.call('DELETE', `/v1/apps/${f.app.id}/builds/${build.id}`, { token: f.dev.accessToken })).status).toBe(204);
      worker = await startTestServer({ database: front.database, dataDir: front.dataDir });
      while ((await jobCount(front)) > 0) await new Promise((r) => setTimeout(r, 100));
      expect(storedFiles(front)).toEqual([]);
    } finally {
      await worker?.close();
      await front.close();
    }
  });
});
