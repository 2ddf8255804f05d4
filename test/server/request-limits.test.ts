import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { settled, storedFiles } from '../builds/support.js';
import { createApp, registerDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { multipartParts, rawExchange } from '../support/raw-http.js';
import { startTestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

// Issue 18 items 5 and 7: header and body read limits before authentication, and uploads that live
// as long as their bytes keep coming. Short limits so that each case runs in seconds.
const server = await startTestServer({
  env: {
    LATCHKEY_MAX_HEADER_BYTES: '4096',
    LATCHKEY_HEADERS_TIMEOUT_MS: '1000',
    LATCHKEY_BODY_TIMEOUT_MS: '1500',
    LATCHKEY_BODY_IDLE_TIMEOUT_MS: '1000',
  },
});
afterAll(() => server.close());
const call = client(server.url);

const expectStandardError = (body: string, code: string, status: number) => {
  expect(JSON.parse(body)).toMatchObject({ error_code: code, status_code: status });
  expect(typeof JSON.parse(body).detail).toBe('string');
};

/** `count` pieces of `piece`, each after a pause of `pauseMs`. */
const trickle = (piece: string | Buffer, count: number, pauseMs: number) => Array.from({ length: count }, () => [pauseMs, piece]).flat();

describe('request limits before authentication', () => {
  it('cuts off headers that keep trickling past the headers timeout: 408 with the standard error body', async () => {
    const res = await rawExchange(server.url, ['GET /healthz HTTP/1.1\r\nHost: x\r\n', ...trickle('X-Slow: 1\r\n', 40, 200), '\r\n']);
    expect(res.status).toBe(408);
    expectStandardError(res.body, 'REQUEST_TIMEOUT', 408);
    expect(res.closed || res.headers.connection === 'close').toBe(true);
  });

  it('refuses headers larger than the limit: 431 with the standard error body', async () => {
    const res = await rawExchange(server.url, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(8192)}\r\n\r\n`]);
    expect(res.status).toBe(431);
    expectStandardError(res.body, 'HEADERS_TOO_LARGE', 431);
  });

  it('cuts off an unauthenticated body that arrives slowly but steadily past the body timeout', async () => {
    const body = JSON.stringify({ email: 'slow@example.test', password: 'x'.repeat(40) });
    const res = await rawExchange(server.url, [
      `POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      ...trickle('', 0, 0),
      ...[...body].flatMap((ch) => [150, ch]),
    ]);
    expect(res.status).toBe(408);
    expectStandardError(res.body, 'REQUEST_TIMEOUT', 408);
  });

  it('cuts off a body that stops arriving (idle) on a route that needs no credential', async () => {
    const res = await rawExchange(server.url, ['POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"email":', 10_000]);
    expect(res.status).toBe(408);
    expectStandardError(res.body, 'REQUEST_TIMEOUT', 408);
  });

  it('cuts off a body that stops arriving on a runtime operation too, and counts the 408 the client got', async () => {
    const res = await rawExchange(server.url, ['POST /v1/licenses/refresh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"token":', 10_000]);
    expect(res.status).toBe(408);
    expectStandardError(res.body, 'REQUEST_TIMEOUT', 408);
    // Counted once the operation saw its body cut off: as the 408 sent, not as an outage (503).
    const counted = await eventually('the 408 counted', async () => {
      const metrics = String((await call('GET', '/metrics', { token: server.adminToken })).body);
      return /latchkey_http_requests_total\{method="POST",route="\/v1\/licenses\/refresh",status="408"\} 1/.test(metrics) && metrics;
    });
    expect(counted).not.toMatch(/route="\/v1\/licenses\/refresh",status="503"/);
  });
});

describe('uploads: an idle timeout per chunk, not a total one', async () => {
  const dev = await registerDeveloper(call);
  const app = await createApp(call, dev);
  const head = (length: number, contentType: string) =>
    `POST /v1/apps/${app.id}/builds HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dev.accessToken}\r\nContent-Type: ${contentType}\r\n` +
    `Content-Length: ${length}\r\nConnection: close\r\n\r\n`;

  it('takes a slow but steady upload that lasts longer than any other body may', async () => {
    const file = randomBytes(64 * 1024);
    const form = multipartParts({ platform: 'cross_platform' }, 'artifact', 'slow.bin', file);
    const pieces = Array.from({ length: 16 }, (_, i) => file.subarray(i * 4096, (i + 1) * 4096));
    // 16 pieces 250 ms apart: 4 s, past the 1.5 s body timeout, never idle for the 1 s idle timeout.
    const res = await rawExchange(server.url, [head(form.length, form.contentType), form.head, ...pieces.flatMap((p) => [250, p]), form.tail]);
    expect(res.status, res.body).toBe(201);
    const build = await settled({ server, call, dev, app }, JSON.parse(res.body).id);
    expect(build.artifact_size_bytes).toBe(file.length);
  });

  it('answers 408 to an upload that stops sending, and keeps nothing of it', async () => {
    const before = storedFiles(server);
    const file = randomBytes(256 * 1024);
    const form = multipartParts({ platform: 'cross_platform' }, 'artifact', 'stalled.bin', file);
    const res = await rawExchange(server.url, [head(form.length, form.contentType), form.head, file.subarray(0, 100 * 1024), 5000]);
    expect(res.status).toBe(408);
    expectStandardError(res.body, 'REQUEST_TIMEOUT', 408);
    // Nothing staged or stored, no build recorded. The staged part goes once the server has torn the
    // request down, which it does after the 408 is written.
    const isNew = (f: string) => !before.includes(f) && !/^apps\/[^/]+\/builds\/[^/]+\/(package|protected)/.test(f);
    await eventually('the staged part to be removed', async () => storedFiles(server).filter(isNew).length === 0, 50);
    const builds = await call('GET', `/v1/apps/${app.id}/builds`, { token: dev.accessToken });
    expect(builds.body.every((b: { artifact_name: string }) => b.artifact_name !== 'stalled.bin')).toBe(true);
  });

  it('takes a client that leaves mid-upload as the client cut off, not as a server error (no 500 counted), and keeps nothing of it', async () => {
    const before = storedFiles(server);
    const file = randomBytes(256 * 1024);
    const form = multipartParts({ platform: 'cross_platform' }, 'artifact', 'left.bin', file);
    const res = await rawExchange(server.url, [head(form.length, form.contentType), form.head, file.subarray(0, 100 * 1024), 200, null]);
    expect(res.status).toBe(0);
    const metrics = await eventually('the cut-off upload counted', async () => {
      const text = String((await call('GET', '/metrics', { token: server.adminToken })).body);
      return /route="\/v1\/apps\/\{app_id\}\/builds",status="408"\} 1\n/.test(text) && text;
    });
    expect(metrics).not.toMatch(/route="\/v1\/apps\/\{app_id\}\/builds",status="5\d\d"/);
    const isNew = (f: string) => !before.includes(f) && !/^apps\/[^/]+\/builds\/[^/]+\/(package|protected)/.test(f);
    await eventually('the staged part to be removed', async () => storedFiles(server).filter(isNew).length === 0, 50);
  });

  it('takes a client that leaves mid-chunk of a resumable upload the same way: the chunk keeps nothing, and the upload resumes where it stood', async () => {
    const file = randomBytes(256 * 1024);
    const body = { filename: 'resumed.bin', size_bytes: file.length, sha256: createHash('sha256').update(file).digest('hex'), platform: 'cross_platform' };
    const session = await call('POST', `/v1/apps/${app.id}/uploads`, { token: dev.accessToken, body });
    expect(session.status).toBe(201);
    const chunk =
      `PUT /v1/apps/${app.id}/uploads/${session.body.id}?offset=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dev.accessToken}\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${file.length}\r\n\r\n`;
    expect((await rawExchange(server.url, [chunk, file.subarray(0, 100 * 1024), 200, null])).status).toBe(0);
    const route = 'route="\\/v1\\/apps\\/\\{app_id\\}\\/uploads\\/\\{upload_id\\}"';
    const metrics = await eventually('the cut-off chunk counted', async () => {
      const text = String((await call('GET', '/metrics', { token: server.adminToken })).body);
      return new RegExp(`method="PUT",${route},status="408"\\} 1\\n`).test(text) && text;
    });
    expect(metrics).not.toMatch(new RegExp(`${route},status="5\\d\\d"`));
    expect((await call('GET', `/v1/apps/${app.id}/uploads/${session.body.id}`, { token: dev.accessToken })).body.offset).toBe(0);
  });

  it('counts a client gone before anything read its body (while it was authenticated, rate limited, looked up) the same, instead of waiting on it forever', async () => {
    const file = randomBytes(64 * 1024);
    const body = { filename: 'gone.bin', size_bytes: file.length, sha256: createHash('sha256').update(file).digest('hex'), platform: 'cross_platform' };
    const session = await call('POST', `/v1/apps/${app.id}/uploads`, { token: dev.accessToken, body });
    const chunkHead =
      `PUT /v1/apps/${app.id}/uploads/${session.body.id}?offset=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${dev.accessToken}\r\n` +
      `Content-Type: application/octet-stream\r\nContent-Length: ${file.length}\r\n\r\n`;
    const form = multipartParts({ platform: 'cross_platform' }, 'artifact', 'gone.bin', file);
    const loginHead = 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"email":';
    // Each dropped as soon as its first bytes are out: the server learns of it before it reads the body.
    await rawExchange(server.url, [chunkHead, file.subarray(0, 1024), null]);
    await rawExchange(server.url, [head(form.length, form.contentType), form.head, null]);
    await rawExchange(server.url, [loginHead, null]);
    const counted = (text: string, method: string, route: string) => new RegExp(`method="${method}",route="${route}",status="408"\\} \\d+\\n`).test(text);
    await eventually('each request counted as cut off', async () => {
      const text = String((await call('GET', '/metrics', { token: server.adminToken })).body);
      return (
        counted(text, 'PUT', '\\/v1\\/apps\\/\\{app_id\\}\\/uploads\\/\\{upload_id\\}') &&
        counted(text, 'POST', '\\/v1\\/apps\\/\\{app_id\\}\\/builds') &&
        counted(text, 'POST', '\\/v1\\/auth\\/login')
      );
    });
    expect((await call('GET', `/v1/apps/${app.id}/uploads/${session.body.id}`, { token: dev.accessToken })).body.offset).toBe(0);
  });

  it('answers an upload body it refuses before its end, rather than resetting the client still sending it', async () => {
    // The wrong media type is refused on the headers, with 8 MB still on their way. Closing the
    // connection then races the client's sending: under load its reset came before the answer.
    // Kept open, Node reads the rest and the answer always arrives.
    const padding = JSON.stringify({ padding: 'x'.repeat(8 * 1024 * 1024) });
    for (let i = 0; i < 3; i++) {
      const res = await call('POST', `/v1/apps/${app.id}/builds`, { token: dev.accessToken, raw: { data: padding, contentType: 'application/json' } });
      expect(res.status).toBe(415);
      expect(res.body).toMatchObject({ error_code: 'UNSUPPORTED_MEDIA_TYPE', status_code: 415 });
      expect(res.headers.get('connection')).not.toBe('close');
    }
  });

  it('drains a body it refuses midway (413) and keeps the connection, rather than closing it on the client still sending', async () => {
    // Chunked, so the limit is found while reading: the rest is drained, and the answer must not
    // close the connection under a client still sending it (its reset could come before the 413).
    const oversized = Buffer.alloc(2 * 1024 * 1024, 'x');
    const res = await fetch(`${server.url}/v1/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          for (let at = 0; at < oversized.length; at += 64 * 1024) controller.enqueue(oversized.subarray(at, at + 64 * 1024));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error_code: 'PAYLOAD_TOO_LARGE', status_code: 413 });
    expect(res.headers.get('connection')).not.toBe('close');
  });

  it('gives an unauthenticated upload no more time than any other body', async () => {
    const file = randomBytes(64 * 1024);
    const form = multipartParts({ platform: 'cross_platform' }, 'artifact', 'anon.bin', file);
    const anonHead = `POST /v1/apps/${app.id}/builds HTTP/1.1\r\nHost: x\r\nContent-Type: ${form.contentType}\r\nContent-Length: ${form.length}\r\n\r\n`;
    const res = await rawExchange(server.url, [anonHead, form.head, ...trickle(file.subarray(0, 1024), 30, 200)]);
    expect(res.status).toBe(401);
  });
});
