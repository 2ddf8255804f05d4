import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { randomFingerprint } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';

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
