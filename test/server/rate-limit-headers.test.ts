/**
 * docs/contract.md Limits: "Rate-limit headers are included in all responses" (names ours, per
 * docs/design.md: the IETF RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset). Declared in the
 * OpenAPI document for every operation's answers, and sent by health and by the portal too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../portal/support.js';
import { registerDeveloper } from '../support/fixtures.js';
import { client, type ApiResponse } from '../support/http.js';
import { startTestServer } from '../support/server.js';

const server = await startTestServer({ realRateLimits: true });
const call = client(server.url);
afterAll(() => server.close());

const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

function expectRateLimitHeaders(res: Pick<ApiResponse, 'headers' | 'status'>, where: string, limit?: number): void {
  for (const name of RATE_LIMIT_HEADERS) expect(res.headers.get(name), `${where} (${res.status}): ${name}`).toMatch(/^\d+$/);
  if (limit !== undefined) expect(Number(res.headers.get('RateLimit-Limit')), where).toBe(limit);
  expect(Number(res.headers.get('RateLimit-Remaining')), where).toBeLessThanOrEqual(Number(res.headers.get('RateLimit-Limit')));
}

describe('[Rate limits] the RateLimit headers', () => {
  it('[Rate limits] are declared by the OpenAPI document on every response of every route, health included, and Retry-After on 429', async () => {
    const document = (await call('GET', '/v1/openapi.json')).body;
    const resolve = (ref: string) =>
      ref
        .split('/')
        .slice(1)
        .reduce((node: any, key) => node[key], document);
    expect(Object.keys(document.components.headers)).toEqual(expect.arrayContaining([...RATE_LIMIT_HEADERS, 'Retry-After']));
    expect(document.paths['/healthz']?.get).toBeDefined();
    expect(document.paths['/readyz']?.get).toBeDefined();
    let responses = 0;
    for (const [path, item] of Object.entries<any>(document.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        expect(op['x-rate-limit-class'], `${method} ${path}`).toMatch(/^\w+$/);
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const headers = (response.$ref ? resolve(response.$ref) : response).headers ?? {};
          expect(Object.keys(headers), `${method} ${path} ${status}`).toEqual(expect.arrayContaining(RATE_LIMIT_HEADERS));
          for (const name of RATE_LIMIT_HEADERS) expect(headers[name].$ref ? resolve(headers[name].$ref).schema.type : headers[name].schema.type).toBe('integer');
          if (status === '429') expect(Object.keys(headers), `${method} ${path}`).toContain('Retry-After');
          responses++;
        }
      }
    }
    expect(responses).toBeGreaterThan(100);
  });

  it('[Rate limits] come with the answers of /healthz and /readyz, and count down', async () => {
    for (const path of ['/healthz', '/readyz']) {
      server.clock.enterFreshWindow(60_000);
      const first = await call('GET', path);
      const second = await call('GET', path);
      expect(first.status).toBe(200);
      expectRateLimitHeaders(first, path, 1200);
      expect(Number(second.headers.get('RateLimit-Remaining'))).toBeLessThan(Number(first.headers.get('RateLimit-Remaining')));
    }
  });

  it("[Rate limits] come with every portal answer: the page, its files, the session calls, refusals, and forwarded calls (the operation's own)", async () => {
    const dev = await registerDeveloper(call);
    const portal = new PortalClient(server.url);
    const page = await fetch(`${server.url}/portal`);
    expect(page.status).toBe(200);
    expectRateLimitHeaders(page, 'the page', 1200);
    const asset = await fetch(`${server.url}/portal/assets/portal.js`);
    expectRateLimitHeaders(asset, 'a file', 1200);
    expect((await fetch(`${server.url}/portal/assets/portal.js`, { headers: { 'if-none-match': asset.headers.get('etag')! } })).status).toBe(304);
    expectRateLimitHeaders(await fetch(`${server.url}/portal/assets/nope.js`), 'a missing file', 1200);
    expectRateLimitHeaders(await portal.refresh(), 'the session', 1200);
    const wrongPassword = await portal.send('POST', '/portal/session/login', { body: { email: dev.email, password: 'not the password' } });
    expect(wrongPassword.status).toBe(401);
    // The sign-in's answer is the API's: its authentication limit, 10 a minute.
    expectRateLimitHeaders(wrongPassword, 'a refused sign-in', 10);
    expectRateLimitHeaders(await portal.api('GET', '/v1/apps'), 'a forwarded call before signing in', 1200);
    expect((await portal.signIn(dev.email, dev.password)).status).toBe(200);
    const apps = await portal.api('GET', '/v1/apps');
    expect(apps.status).toBe(200);
    expectRateLimitHeaders(apps, 'a forwarded call', 60);
  });
});
