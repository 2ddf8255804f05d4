import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  it('exposes Prometheus metrics labelled by route template', async () => {
    await call('GET', '/v1/apps');
    const res = await call('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.body).toContain('latchkey_http_requests_total{method="GET",route="/v1/apps",status="401"}');
  });

  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const res = await call('GET', '/v1/openapi.json');
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/v1/apps'].get.parameters.map((p: { name: string }) => p.name)).toEqual(['limit', 'offset']);
    expect(res.body.paths['/v1/auth/register'].post.requestBody.content['application/json'].schema.required).toEqual(
      expect.arrayContaining(['email', 'password', 'company_name']),
    );
  });
});
