import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipartBody } from '../../cli/src/multipart-body.js';
import { expectError } from '../support/assertions.js';
import { createApp, registerDeveloper } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { owner, settled, storedFiles, upload, uploadBuild, type Owner } from './support.js';

const MAX = 256 * 1024;
let server: TestServer;
let o: Owner;

beforeAll(async () => {
  // No job runner: these builds stay QUEUED, so the files below are exactly what uploads stored.
  server = await startTestServer({ env: { LATCHKEY_MAX_ARTIFACT_BYTES: String(MAX), LATCHKEY_RUN_JOBS: 'false' } });
  o = await owner(server);
});
afterAll(() => server.close());

const binary = (bytes: number) => ({ data: new Uint8Array(bytes).fill(7), name: 'tool.bin' });

describe('POST /v1/apps/{app_id}/builds', () => {
  it('streams the artifact to storage and answers 201 QUEUED with the build', async () => {
    const res = await upload(o, { file: binary(1000), fields: { platform: 'linux-x64', python_version: '3.12', version: '2.1.0' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^bld_/),
      app_id: o.app.id,
      status: 'QUEUED',
      platform: 'linux-x64',
      python_version: '3.12',
      version: '2.1.0',
      protection_level: null,
      scan_status: 'PENDING',
      artifact_name: 'tool.bin',
      artifact_size_bytes: 1000,
      artifact_sha256: null,
      released: false,
      completed_at: null,
    });
    expect(new Date(res.body.created_at).toString()).not.toBe('Invalid Date');
    expect(storedFiles(server)).toEqual([`apps/${o.app.id}/builds/${res.body.id}/artifact`]);
    const got = await o.call('GET', `/v1/apps/${o.app.id}/builds/${res.body.id}`, { token: o.dev.accessToken });
    expect(got.body).toEqual(res.body);
  });

  it('takes python_version as optional and cross_platform for any app', async () => {
    const res = await upload(o, { file: binary(10), fields: { platform: 'cross_platform' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ platform: 'cross_platform', python_version: null, version: null });
  });

  describe('refuses bad input with a clear 4xx and stores nothing', () => {
    const cases: [string, () => Promise<Awaited<ReturnType<typeof upload>>>, number, string][] = [
      ['no artifact', () => upload(o, { fields: { platform: 'linux-x64' } }), 400, 'body.artifact: required: the artifact as a file part'],
      ['the artifact as a text field', () => upload(o, { fields: { platform: 'linux-x64', artifact: 'x' } }), 400, 'body.artifact: required'],
      ['no platform', () => upload(o, { file: binary(10) }), 400, 'body.platform'],
      ['an unknown platform', () => upload(o, { file: binary(10), fields: { platform: 'amiga-68k' } }), 400, 'must be one of win-x64'],
      ['a platform the app does not target', () => upload(o, { file: binary(10), fields: { platform: 'mac-arm64' } }), 400, "not one of the app's platforms"],
      ['an empty file', () => upload(o, { file: { data: '', name: 'empty.js' }, fields: { platform: 'linux-x64' } }), 400, 'body.artifact: must not be empty'],
      ['a bad python_version', () => upload(o, { file: binary(10), fields: { platform: 'linux-x64', python_version: 'three' } }), 400, 'body.python_version'],
      ['a bad version', () => upload(o, { file: binary(10), fields: { platform: 'linux-x64', version: '../1' } }), 400, 'body.version'],
      ['an unknown field', () => upload(o, { file: binary(10), fields: { platform: 'linux-x64', colour: 'red' } }), 400, 'colour'],
      ['the file under another name', () => upload(o, { file: binary(10), fileField: 'binary', fields: { platform: 'linux-x64' } }), 400, 'body.binary: unexpected file'],
      ['a file larger than the maximum', () => upload(o, { file: binary(MAX + 1), fields: { platform: 'linux-x64' } }), 413, `artifact exceeds the ${MAX}-byte limit`],
    ];
    it.each(cases)('%s', async (_name, send, status, detail) => {
      const before = storedFiles(server);
      const res = await send();
      expectError(res, status);
      expect(res.body.detail).toContain(detail);
      expect(storedFiles(server)).toEqual(before);
    });

    it('a file past the maximum sent without Content-Length, stopped as it streams', async () => {
      const before = storedFiles(server);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-upload-'));
      const file = path.join(dir, 'big.bin');
      // Just past the limit plus the form's own overhead allowance: refused mid-stream, not by header.
      fs.writeFileSync(file, Buffer.alloc(MAX + 1));
      const { contentType, body } = await multipartBody({ fields: { platform: 'linux-x64' }, file: { field: 'artifact', path: file }, onProgress: () => {} });
      const res = await o.call('POST', `/v1/apps/${o.app.id}/builds`, { token: o.dev.accessToken, raw: { data: body, contentType } });
      expectError(res, 413, 'PAYLOAD_TOO_LARGE');
      expect(storedFiles(server)).toEqual(before);
      fs.rmSync(dir, { recursive: true });
    });

    it('a JSON body, with 415', async () => {
      const res = await o.call('POST', `/v1/apps/${o.app.id}/builds`, { token: o.dev.accessToken, body: { platform: 'linux-x64' } });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('a malformed multipart body', async () => {
      const res = await o.call('POST', `/v1/apps/${o.app.id}/builds`, {
        token: o.dev.accessToken,
        raw: { data: '--xyz\r\nContent-Disposition: form-data; name="artifact"; filename="a.bin"\r\n\r\nabc', contentType: 'multipart/form-data; boundary=xyz' },
      });
      expectError(res, 400, 'VALIDATION_FAILED');
    });

    it("another developer's app, and a missing one, with 404 before the upload is read", async () => {
      const stranger = await registerDeveloper(o.call);
      const res = await upload(o, { file: binary(10), fields: { platform: 'linux-x64' }, token: stranger.accessToken });
      expectError(res, 404, 'APP_NOT_FOUND');
      expectError(await upload(o, { file: binary(10), fields: { platform: 'linux-x64' }, path: '/v1/apps/app_missing/builds' }), 404, 'APP_NOT_FOUND');
    });

    it('leaves nothing in staging', () => {
      expect(storedFiles(server).filter((f) => !f.startsWith('apps/'))).toEqual([]);
    });
  });
});

describe('multipart parsing', () => {
  const boundary = 'Zq7-boundary-Zq7';
  /** A hand-written form, sent in chunks of the given sizes (cycled). */
  async function sendForm(parts: Buffer, chunkSizes: number[]) {
    let offset = 0;
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= parts.length) return controller.close();
        const size = chunkSizes[i++ % chunkSizes.length]!;
        controller.enqueue(new Uint8Array(parts.subarray(offset, offset + size)));
        offset += size;
      },
    });
    return o.call('POST', `/v1/apps/${o.app.id}/builds`, { token: o.dev.accessToken, raw: { data: body, contentType: `multipart/form-data; boundary="${boundary}"` } });
  }
  // Look-alikes of the delimiter inside the file: without the CRLF, cut short, and at the very end.
  const content = Buffer.concat([
    Buffer.from(`--${boundary}\r\n`),
    Buffer.alloc(3000, 0x41),
    Buffer.from(`\r\n--${boundary.slice(0, -1)}X\r\n`),
    Buffer.from(`\r\n-${boundary}`),
    Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) % 256)),
    Buffer.from('\r\n--\r\n'),
  ]);
  const form = Buffer.concat([
    Buffer.from(`preamble to ignore\r\n--${boundary}\r\nContent-Disposition: form-data; name="platform"\r\n\r\nlinux-x64\r\n`),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="artifact"; filename="naive.bin"; filename*=UTF-8''na%C3%AFve%20copy.bin\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    content,
    Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n4.5.6\r\n--${boundary}--\r\nepilogue to ignore`),
  ]);

  it.each([
    ['in one piece', [form.length]],
    ['in 64 KiB pieces', [65536]],
    ['byte by byte around every seam', [1, 2, 3, 5, 7, 11, 13, 17, 19, 23]],
    ['in pieces just shorter than the delimiter', [boundary.length + 3]],
  ])('takes a form %s, finding only real delimiters', async (_name, sizes) => {
    const res = await sendForm(form, sizes);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ platform: 'linux-x64', version: '4.5.6', artifact_name: 'na_ve_copy.bin', artifact_size_bytes: content.length });
    const stored = fs.readFileSync(path.join(server.dataDir, 'storage', 'apps', o.app.id, 'builds', res.body.id, 'artifact'));
    expect(stored.equals(content)).toBe(true);
  });

  it.each([
    ['a form cut off before its end', form.subarray(0, form.length - 40)],
    ['a part without Content-Disposition', Buffer.from(`--${boundary}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${boundary}--\r\n`)],
    [
      'a field given twice',
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="platform"\r\n\r\nlinux-x64\r\n--${boundary}\r\nContent-Disposition: form-data; name="platform"\r\n\r\nwin-x64\r\n--${boundary}--\r\n`,
      ),
    ],
    ['a field longer than 1 KiB', Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="version"\r\n\r\n${'9'.repeat(2000)}\r\n--${boundary}--\r\n`)],
    [
      'two files',
      Buffer.concat([
        form.subarray(0, form.indexOf('\r\n--' + boundary + '\r\nContent-Disposition: form-data; name="version"')),
        Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="artifact"; filename="b.bin"\r\n\r\nbbb\r\n--${boundary}--\r\n`),
      ]),
    ],
  ])('refuses %s with 400 and keeps nothing', async (_name, body) => {
    const before = storedFiles(server);
    const res = await sendForm(body, [7, 4096]);
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(storedFiles(server)).toEqual(before);
  });
});

describe('GET /v1/apps/{app_id}/builds', () => {
  it('lists oldest first with pagination headers and a status filter', async () => {
    const fresh = { ...o, app: await createApp(o.call, o.dev) };
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await uploadBuild(fresh, binary(5 + i), { platform: 'win-x64' })).id);
    const list = await o.call('GET', `/v1/apps/${fresh.app.id}/builds?limit=2`, { token: o.dev.accessToken });
    expect(list.status).toBe(200);
    expect(list.body.map((b: any) => b.id)).toEqual(ids.slice(0, 2));
    expect(list.headers.get('x-total-count')).toBe('3');
    expect(list.headers.get('link')).toContain('rel="next"');
    const queued = await o.call('GET', `/v1/apps/${fresh.app.id}/builds?status=queued`, { token: o.dev.accessToken });
    expect(queued.body).toHaveLength(3);
    const ready = await o.call('GET', `/v1/apps/${fresh.app.id}/builds?status=READY`, { token: o.dev.accessToken });
    expect(ready.body).toEqual([]);
    expectError(await o.call('GET', `/v1/apps/${fresh.app.id}/builds?status=DONE`, { token: o.dev.accessToken }), 400, 'VALIDATION_FAILED');
    expectError(await o.call('GET', `/v1/apps/app_missing/builds`, { token: o.dev.accessToken }), 404, 'APP_NOT_FOUND');
  });
});

describe('build operations', () => {
  it('are limited to 30 requests a minute', async () => {
    const limited = await startTestServer({ realRateLimits: true, env: { LATCHKEY_RUN_JOBS: 'false' } });
    try {
      const l = await owner(limited);
      limited.clock.enterFreshWindow(60_000);
      let res;
      for (let i = 0; i < 31; i++) res = await l.call('GET', `/v1/apps/${l.app.id}/builds`, { token: l.dev.accessToken });
      expectError(res!, 429, 'RATE_LIMITED');
      expect(res!.headers.get('ratelimit-limit')).toBe('30');
    } finally {
      await limited.close();
    }
  });
});

it('the upload becomes READY once a job runner takes it, on any server sharing the database and storage', async () => {
  const worker = await startTestServer({ database: server.database, dataDir: server.dataDir });
  try {
    const build = await uploadBuild(o, { data: 'console.log(1)\n', name: 'main.js' });
    expect((await settled(o, build.id)).status).toBe('READY');
  } finally {
    await worker.close();
  }
});
