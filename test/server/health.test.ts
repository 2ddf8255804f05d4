import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { registerDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let call: Call;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
});
afterAll(() => server.close());

describe('operations endpoints', () => {
  it('reports liveness and readiness', async () => {
    expect((await call('GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await call('GET', '/readyz')).body).toEqual({ status: 'ready' });
  });

  it('exposes Prometheus metrics labelled by route template, to the operator token', async () => {
    await call('GET', '/v1/apps');
    const res = await call('GET', '/metrics', { token: server.adminToken });
    expect(res.status).toBe(200);
    expect(res.body).toContain('latchkey_http_requests_total{method="GET",route="/v1/apps",status="401"}');
  });

  it('keeps metrics from anyone else: 401 without the operator token or with another one', async () => {
    const dev = await registerDeveloper(call);
    for (const token of [undefined, 'not-the-operator-token-at-all', dev.accessToken]) {
      const res = await call('GET', '/metrics', { token });
      expectError(res, 401, 'UNAUTHORIZED');
      expect(JSON.stringify(res.body)).not.toContain('latchkey_http');
    }
    expectError(await call('GET', '/metrics', { apiKey: dev.apiKey }), 401, 'UNAUTHORIZED');
  });

  it('hides metrics altogether (404) on a server with no operator token', async () => {
    const bare = await startTestServer({ env: { LATCHKEY_ADMIN_TOKEN: undefined } });
    try {
      expectError(await client(bare.url)('GET', '/metrics'), 404, 'NOT_FOUND');
    } finally {
      await bare.close();
    }
  });

  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const res = await call('GET', '/v1/openapi.json');
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/v1/apps'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['limit', 'offset']);
    expect(res.body.paths['/v1/auth/register'].post.requestBody.content['application/json'].schema.required).toEqual(expect.arrayContaining(['email', 'password', 'company_name']));
  });
});
