import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { tenant } from '../licensing/world.js';

// The runtime operations are answered by a lane of their own (server/http/runtime-lane.ts) when the
// method and path are exact; any other spelling reaches the main application. Both must answer alike.
const server = await startTestServer();
afterAll(() => server.close());
const call = client(server.url);

const unknownKey = { license_key: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ', device_fingerprint: randomFingerprint(), build_id: null };
const ENVELOPE_HEADERS = ['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'content-type'];

describe('runtime lane', () => {
  it('answers an exact path as the main application answers the same operation with a trailing slash', async () => {
    for (const [body, status, code] of [
      [unknownKey, 401, 'INVALID_LICENSE_KEY'],
      [{ license_key: 'x' }, 400, 'VALIDATION_FAILED'],
    ] as const) {
      const lane = await call('POST', '/v1/licenses/activate', { body, headers: { 'x-request-id': 'lane-1' } });
      const router = await call('POST', '/v1/licenses/activate/', { body, headers: { 'x-request-id': 'router-1' } });
      expectError(lane, status, code);
      expectError(router, status, code);
      expect(lane.body.request_id).toBe('lane-1');
      expect(router.body.request_id).toBe('router-1');
      for (const name of ENVELOPE_HEADERS) {
        expect(lane.headers.get(name), name).not.toBeNull();
        expect(lane.headers.get(name) !== null, name).toBe(router.headers.get(name) !== null);
      }
      expect(lane.headers.get('content-type')).toBe(router.headers.get('content-type'));
    }
  });

  it('refuses a body that is not JSON, too large or ill-typed as the main application does', async () => {
    const cases = [
      [{ raw: { data: '{"license_key":', contentType: 'application/json' } }, 400, 'INVALID_JSON'],
      [{ raw: { data: 'license_key=x', contentType: 'application/x-www-form-urlencoded' } }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      [{ raw: { data: JSON.stringify({ license_key: 'x'.repeat(2_000_000) }), contentType: 'application/json' } }, 413, 'PAYLOAD_TOO_LARGE'],
      [{ body: { ...unknownKey, note: 'a\u0000b' } }, 400, 'VALIDATION_FAILED'],
    ] as const;
    for (const [request, status, code] of cases) {
      expectError(await call('POST', '/v1/licenses/activate', request), status, code);
      expectError(await call('POST', '/v1/licenses/activate/', request), status, code);
    }
    // A media type with parameters, or any +json type, is JSON.
    expectError(
      await call('POST', '/v1/licenses/activate', { raw: { data: JSON.stringify(unknownKey), contentType: 'application/vnd.api+json; charset=utf-8' } }),
      401,
      'INVALID_LICENSE_KEY',
    );
  });

  it("answers a license's operations with its limit's headers, and 204 without a body or content type", async () => {
    const { dev, app } = await tenant(server);
    const license = await createLicense(call, dev, { app_id: app.id, device_limit: 1 });
    const activation = { license_key: license.license_key, device_fingerprint: randomFingerprint(), build_id: null };
    const activated = await call('POST', '/v1/licenses/activate', { body: activation });
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    // The license's activation limit, one count for both ways: the re-activation is its second hit.
    const again = await call('POST', '/v1/licenses/activate/', { body: activation });
    expect(again.status).toBe(200);
    expect(again.headers.get('ratelimit-limit')).toBe(activated.headers.get('ratelimit-limit'));
    expect(Number(again.headers.get('ratelimit-remaining'))).toBe(Number(activated.headers.get('ratelimit-remaining')) - 1);
    for (const path of ['/v1/licenses/checkin', '/v1/licenses/checkin/']) {
      const checkin = await call('POST', path, { body: { token: activated.body.token } });
      expect(checkin.status, path).toBe(204);
      expect(checkin.headers.get('content-type'), path).toBeNull();
      expect(checkin.headers.get('content-length') ?? '0', path).toBe('0');
      expect(checkin.headers.get('x-request-id'), path).not.toBeNull();
    }
  });

  it('leaves other methods on its paths to the main application (405 with Allow)', async () => {
    const res = await call('DELETE', '/v1/licenses/refresh');
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toContain('POST');
  });

  it("counts its answers in the metrics under the operation's route", async () => {
    await call('POST', '/v1/licenses/refresh', { body: { token: 'not-a-token' } });
    const metrics = await call('GET', '/metrics', { token: server.adminToken });
    expect(String(metrics.body)).toMatch(/latchkey_http_requests_total\{method="POST",route="\/v1\/licenses\/refresh",status="401"\} [1-9]/);
  });
});
