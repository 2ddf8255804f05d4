import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createApp, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

// JSON can spell half of a UTF-16 surrogate pair (`\ud800`), which no UTF-8 text holds: PostgreSQL
// refuses it in jsonb, and text would keep a replacement character instead of what was sent.

let server: TestServer;
let call: Call;
let dev: TestDeveloper;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
  dev = await registerDeveloper(call);
});
afterAll(() => server.close());

/** The body as written on the wire: `JSON.stringify` would escape the surrogate the same way, but this shows it. */
const rawJson = (data: string) => ({ raw: { data, contentType: 'application/json' } });

describe('a lone surrogate in a JSON body', () => {
  it.each([
    ['an app name', '/v1/apps', '{"name":"\\ud800","platforms":["linux-x64"]}', 'body.name'],
    ['a low surrogate alone', '/v1/apps', '{"name":"Notes \\udc00 Pro","platforms":["linux-x64"]}', 'body.name'],
    ['a key of a nested object', '/v1/licenses', '{"app_id":"app_x","license_type":"trial","features":{"\\ud83d":true}}', 'body.features'],
  ])('is a 400 VALIDATION_FAILED naming the field, never a 500: %s', async (_name, path, data, field) => {
    const res = await call('POST', path, { token: dev.accessToken, ...rawJson(data) });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.detail).toContain(`${field}: must be well-formed Unicode`);
  });

  it('stores nothing', async () => {
    const before = await call('GET', '/v1/apps', { token: dev.accessToken });
    expectError(await call('POST', '/v1/apps', { token: dev.accessToken, ...rawJson('{"name":"\\ud800x","platforms":["linux-x64"]}') }), 400, 'VALIDATION_FAILED');
    const after = await call('GET', '/v1/apps', { token: dev.accessToken });
    expect(after.headers.get('x-total-count')).toBe(before.headers.get('x-total-count'));
  });

  it('in a license’s features (jsonb) is refused before it reaches PostgreSQL', async () => {
    const app = await createApp(call, dev);
    const res = await call('POST', '/v1/licenses', { token: dev.accessToken, ...rawJson(`{"app_id":"${app.id}","license_type":"trial","features":{"tier":"\\udbff"}}`) });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.detail).toContain('body.features.tier');
    const list = await call('GET', `/v1/licenses?app_id=${app.id}`, { token: dev.accessToken });
    expect(list.headers.get('x-total-count')).toBe('0');
  });

  it('a well-formed pair (an emoji, escaped or not) is accepted', async () => {
    const res = await call('POST', '/v1/apps', { token: dev.accessToken, ...rawJson('{"name":"Notes \\ud83d\\ude00 😀","platforms":["linux-x64"]}') });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.name).toBe('Notes 😀 😀');
  });
});
