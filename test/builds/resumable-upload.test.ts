import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../support/raw-http.js';
import { startTestServer } from '../support/server.js';
import { owner, settled, storedFiles, type Owner } from './support.js';

// Issue 18 item 5: resumable uploads (upload sessions) for files a single request may not carry whole.
const server = await startTestServer({ env: { LATCHKEY_BODY_IDLE_TIMEOUT_MS: '1000', LATCHKEY_BODY_TIMEOUT_MS: '1500' } });
afterAll(() => server.close());

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function start(o: Owner, file: Buffer, overrides: Record<string, unknown> = {}) {
  const res = await o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
    token: o.dev.accessToken,
    body: { filename: 'big-tool.bin', size_bytes: file.length, sha256: sha256(file), platform: 'cross_platform', ...overrides },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.offset).toBe(0);
  return res.body as { id: string; offset: number; expires_at: string };
}

function putChunk(o: Owner, id: string, offset: number, bytes: Buffer, token = o.dev.accessToken) {
  return fetch(`${server.url}/v1/apps/${o.app.id}/uploads/${id}?offset=${offset}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
    body: new Uint8Array(bytes),
  });
}

const status = (o: Owner, id: string, token = o.dev.accessToken) => o.call('GET', `/v1/apps/${o.app.id}/uploads/${id}`, { token });
const complete = (o: Owner, id: string) => o.call('POST', `/v1/apps/${o.app.id}/uploads/${id}/complete`, { token: o.dev.accessToken });
const uploadFiles = () => storedFiles(server).filter((f) => f.startsWith('uploads/') || f.startsWith('.staging/'));

describe('resumable uploads', () => {
  it("resumes an interrupted upload where its last whole chunk ended, and the build has the file's SHA-256", async () => {
    const o = await owner(server);
    const file = randomBytes(3 * MiB + 12345);
    const session = await start(o, file);

    expect((await putChunk(o, session.id, 0, file.subarray(0, MiB))).status).toBe(200);
    // The connection drops halfway through the second chunk: nothing of that chunk is kept.
    const head =
      `PUT /v1/apps/${o.app.id}/uploads/${session.id}?offset=${MiB} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${o.dev.accessToken}\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${MiB}\r\n\r\n`;
    expect((await rawExchange(server.url, [head, file.subarray(MiB, MiB + MiB / 2), 100, null])).status).toBe(0);
    // The half chunk was staged while it came; it is removed once the connection is gone.
    for (let i = 0; i < 100 && uploadFiles().some((f) => f.startsWith('.staging/')); i++) await new Promise((r) => setTimeout(r, 50));
    expect(uploadFiles().filter((f) => f.startsWith('.staging/'))).toEqual([]);
    const afterCut = await status(o, session.id);
    expect(afterCut.status).toBe(200);
    expect(afterCut.body.offset).toBe(MiB);

    // A chunk at the wrong place is refused with where the upload stands.
    const wrong = await putChunk(o, session.id, 2 * MiB, file.subarray(2 * MiB));
    expect(wrong.status).toBe(409);
    expect(wrong.headers.get('upload-offset')).toBe(String(MiB));
    expect((await wrong.json()).error_code).toBe('UPLOAD_OFFSET_MISMATCH');

    // Completing early: 409 with the bytes it has.
    expect((await complete(o, session.id)).body.error_code).toBe('UPLOAD_INCOMPLETE');

    expect((await putChunk(o, session.id, MiB, file.subarray(MiB, 2 * MiB))).status).toBe(200);
    const last = await putChunk(o, session.id, 2 * MiB, file.subarray(2 * MiB));
    expect(last.status).toBe(200);
    expect((await last.json()).offset).toBe(file.length);

    const done = await complete(o, session.id);
    expect(done.status, JSON.stringify(done.body)).toBe(201);
    expect(done.body).toMatchObject({ status: 'QUEUED', artifact_name: 'big-tool.bin', artifact_size_bytes: file.length });
    const build = await settled(o, done.body.id);
    expect(build.status).toBe('READY');
    expect(build.artifact_sha256).toBe(sha256(file));
    // The session is over and its chunks are gone.
    expect((await status(o, session.id)).status).toBe(404);
    expect(uploadFiles().filter((f) => f.includes(session.id))).toEqual([]);
  });

  it('refuses bytes that do not hash to the declared SHA-256, ends the session and keeps nothing', async () => {
    const o = await owner(server);
    const file = randomBytes(200_000);
    const session = await start(o, file);
    const tampered = Buffer.from(file);
    tampered[1000] = tampered[1000]! ^ 0xff;
    expect((await putChunk(o, session.id, 0, tampered)).status).toBe(200);
    const res = await complete(o, session.id);
    expect(res.status).toBe(422);
    expect(res.body.error_code).toBe('UPLOAD_CHECKSUM_MISMATCH');
    expect((await status(o, session.id)).status).toBe(404);
    await new Promise((r) => setTimeout(r, 100));
    expect(uploadFiles()).toEqual([]);
    const builds = await o.call('GET', `/v1/apps/${o.app.id}/builds`, { token: o.dev.accessToken });
    expect(builds.body).toEqual([]);
  });

  it('refuses a chunk past the declared size (413) and keeps nothing of it', async () => {
    const o = await owner(server);
    const file = randomBytes(10_000);
    const session = await start(o, file);
    const res = await putChunk(o, session.id, 0, Buffer.concat([file, Buffer.from('extra')]));
    expect(res.status).toBe(413);
    expect((await status(o, session.id)).body.offset).toBe(0);
  });

  it('binds a session to its developer and app, and sweeps it with its chunks once expired', async () => {
    const o = await owner(server);
    const other = await owner(server);
    const file = randomBytes(50_000);
    const session = await start(o, file);
    expect((await putChunk(o, session.id, 0, file.subarray(0, 20_000))).status).toBe(200);
    // Another developer neither sees nor feeds it.
    expect((await other.call('GET', `/v1/apps/${o.app.id}/uploads/${session.id}`, { token: other.dev.accessToken })).status).toBe(404);
    expect((await putChunk(o, session.id, 20_000, file.subarray(20_000), other.dev.accessToken)).status).toBe(404);
    expect(uploadFiles().some((f) => f.includes(session.id))).toBe(true);

    // A day later (set in the database: access tokens live an hour, so the clock is left alone).
    await server.database
      .db('upload_sessions')
      .where({ id: session.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect((await status(o, session.id)).status).toBe(404);
    // The next upload started sweeps expired sessions and their chunks.
    await start(other, randomBytes(10));
    expect(uploadFiles().some((f) => f.includes(session.id))).toBe(false);
  });

  it('refuses a session larger than the configured maximum artifact size', async () => {
    const o = await owner(server);
    const res = await o.call('POST', `/v1/apps/${o.app.id}/uploads`, {
      token: o.dev.accessToken,
      body: { filename: 'huge.bin', size_bytes: 64 * 1024 ** 3, sha256: 'a'.repeat(64), platform: 'cross_platform' },
    });
    expect(res.status).toBe(413);
  });
});
