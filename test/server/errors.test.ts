import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../server/errors.js';
import { expectError } from '../support/assertions.js';
import { createApp, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call, type CallOptions } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** Small enough that an ordinary app body fits and a padded one does not. */
const MAX_JSON_BYTES = 512;

let server: TestServer;
let call: Call;
let dev: TestDeveloper;
beforeAll(async () => {
  server = await startTestServer({ env: { LATCHKEY_MAX_JSON_BYTES: String(MAX_JSON_BYTES) } });
  call = client(server.url);
  dev = await registerDeveloper(call);
});
afterAll(() => server.close());

const validApp = { name: 'Notes Pro', platforms: ['linux-x64'] };
const json = (data: string) => ({ raw: { data, contentType: 'application/json' } });

async function appCount(): Promise<number> {
  const res = await call('GET', '/v1/apps', { token: dev.accessToken });
  expect(res.status).toBe(200);
  return Number(res.headers.get('x-total-count'));
}

/** A body that streams in chunks with no Content-Length, so the server finds the excess while reading. */
function chunkedBody(totalBytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= totalBytes) return controller.close();
      const chunk = new TextEncoder().encode(' '.repeat(Math.min(128, totalBytes - sent)));
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
}

describe('routing errors', () => {
  it.each([
    ['GET', '/v1/nothing-here'],
    ['GET', '/v1/apps/app_1/nothing-here'],
    ['POST', '/no-version-prefix'],
  ])('%s %s is a 404 NOT_FOUND with the standard body', async (method, path) => {
    expectError(await call(method, path, { token: dev.accessToken }), 404, 'NOT_FOUND');
  });

  it.each([
    ['PATCH', '/v1/apps'],
    ['DELETE', '/v1/apps'],
    ['GET', '/v1/auth/register'],
  ])('%s %s is a 405 METHOD_NOT_ALLOWED naming the allowed methods', async (method, path) => {
    const res = await call(method, path, { token: dev.accessToken });
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toBeTruthy();
  });
});

describe('request ids', () => {
  it("an error body carries the request's id: the caller's own X-Request-Id when well-formed, else a new one", async () => {
    const own = await call('GET', '/v1/nothing-here', { token: dev.accessToken, headers: { 'x-request-id': 'support-ticket-4711' } });
    expectError(own, 404, 'NOT_FOUND');
    expect(own.body.request_id).toBe('support-ticket-4711');
    const malformed = await call('GET', '/v1/nothing-here', { token: dev.accessToken, headers: { 'x-request-id': 'no spaces allowed' } });
    expectError(malformed, 404, 'NOT_FOUND');
    expect(malformed.body.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('request bodies that are refused change nothing', () => {
  const padded = (bytes: number) => json(JSON.stringify(validApp).padEnd(bytes, ' '));
  // Factories, because a streamed body can be sent only once.
  const refusedByBoth: [string, () => CallOptions, number, ErrorCode][] = [
    ['malformed JSON', () => json('{"name": "Notes Pro", '), 400, 'INVALID_JSON'],
    ['a form body', () => ({ raw: { data: 'name=Notes&platforms=linux-x64', contentType: 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['JSON sent as text/plain', () => ({ raw: { data: JSON.stringify(validApp), contentType: 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['no body', () => ({}), 400, 'VALIDATION_FAILED'],
    ['a JSON array', () => ({ body: [validApp] }), 400, 'VALIDATION_FAILED'],
    ['JSON null', () => json('null'), 400, 'VALIDATION_FAILED'],
    ['an unknown field', () => ({ body: { ...validApp, colour: 'red' } }), 400, 'VALIDATION_FAILED'],
    ['a number where a string belongs', () => ({ body: { ...validApp, name: 42 } }), 400, 'VALIDATION_FAILED'],
    ['a string where an array belongs', () => ({ body: { ...validApp, platforms: 'linux-x64' } }), 400, 'VALIDATION_FAILED'],
    ['a string where an integer belongs', () => ({ body: { ...validApp, default_device_limit: '5' } }), 400, 'VALIDATION_FAILED'],
    ['a fraction where an integer belongs', () => ({ body: { ...validApp, offline_grace_hours: 1.5 } }), 400, 'VALIDATION_FAILED'],
    ['a value outside the enum', () => ({ body: { ...validApp, delivery_mode: 'sometimes' } }), 400, 'VALIDATION_FAILED'],
    ['JSON nested 40 levels deep', () => json(`{"name": "Notes", "platforms": ${'['.repeat(40)}${']'.repeat(40)}}`), 400, 'VALIDATION_FAILED'],
    ['a NUL character, which PostgreSQL cannot store', () => ({ body: { ...validApp, name: 'Notes\u0000Pro' } }), 400, 'VALIDATION_FAILED'],
    ['a body one byte over the size limit', () => padded(MAX_JSON_BYTES + 1), 413, 'PAYLOAD_TOO_LARGE'],
    ['a streamed body over the size limit', () => ({ raw: { data: chunkedBody(MAX_JSON_BYTES * 64), contentType: 'application/json' } }), 413, 'PAYLOAD_TOO_LARGE'],
  ];

  it.each([...refusedByBoth, ['a missing required field', () => ({ body: { name: 'Notes Pro' } }), 400, 'VALIDATION_FAILED'] as const])(
    'creating an app with %s',
    async (_case, request, status, code) => {
      const before = await appCount();
      expectError(await call('POST', '/v1/apps', { token: dev.accessToken, ...request() }), status, code);
      expect(await appCount()).toBe(before);
    },
  );

  it.each(refusedByBoth)('updating an app with %s', async (_case, request, status, code) => {
    const app = await createApp(call, dev);
    expectError(await call('PUT', `/v1/apps/${app.id}`, { token: dev.accessToken, ...request() }), status, code);
    expect((await call('GET', `/v1/apps/${app.id}`, { token: dev.accessToken })).body).toEqual(app);
  });

  it('a body of exactly the size limit is accepted', async () => {
    expect((await call('POST', '/v1/apps', { token: dev.accessToken, ...padded(MAX_JSON_BYTES) })).status).toBe(201);
  });
});

describe('hostile JSON', () => {
  it('a body nested deeper than the call stack is a 400, not a crash', async () => {
    const roomy = await startTestServer(); // the default 1 MB limit leaves room for the nesting
    try {
      const roomyCall = client(roomy.url);
      const owner = await registerDeveloper(roomyCall);
      const depth = 200_000;
      const body = `{"name": "Deep", "platforms": ["linux-x64"], "product_key": ${'['.repeat(depth)}${']'.repeat(depth)}}`;
      expectError(await roomyCall('POST', '/v1/apps', { token: owner.accessToken, ...json(body) }), 400, 'VALIDATION_FAILED');
    } finally {
      await roomy.close();
    }
  });
});

describe('query and path errors', () => {
  it('a query value of the wrong type is a 400', async () => {
    expectError(await call('GET', '/v1/apps?limit=ten', { token: dev.accessToken }), 400, 'VALIDATION_FAILED');
  });

  it('an id that cannot exist is a 404 or 400, never a 500', async () => {
    expectError(await call('GET', '/v1/apps/app_does_not_exist', { token: dev.accessToken }), 404, 'APP_NOT_FOUND');
    expectError(await call('GET', `/v1/apps/${'x'.repeat(200)}`, { token: dev.accessToken }), 400, 'VALIDATION_FAILED');
    expectError(await call('GET', '/v1/apps/%E2%82%AC', { token: dev.accessToken }), 404, 'APP_NOT_FOUND');
    expectError(await call('GET', '/v1/apps/app_%00', { token: dev.accessToken }), 400, 'VALIDATION_FAILED');
  });
});
