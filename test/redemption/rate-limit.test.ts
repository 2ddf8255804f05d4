import { afterAll, expect, it } from 'vitest';
import { tenant } from '../licensing/world.js';
import { expectError } from '../support/assertions.js';
import { startTestServer } from '../support/server.js';
import { createBatch } from './support.js';

// docs/contract.md's limits, and client addresses from X-Forwarded-For so two addresses can be told apart.
const server = await startTestServer({ realRateLimits: true, env: { LATCHKEY_TRUST_PROXY: 'true' } });
afterAll(() => server.close());

/** Moves the server's clock to just after a minute starts: the 6 attempts all fall in one window. */
function startOfWindow() {
  server.clock.enterFreshWindow(60_000);
}

it('allows 5 redemption attempts a minute per address, successful or not, then answers 429 with Retry-After: 60 (JSON and the page form alike)', async () => {
  const t = await tenant(server);
  const batch = await createBatch(t, { quantity: 3 });
  startOfWindow();
  const from = (ip: string, body: unknown) => t.call('POST', '/v1/public/redeem', { body, headers: { 'x-forwarded-for': ip } });
  const ip = '203.0.113.7';

  expect((await from(ip, { code: batch.codes[0] })).status).toBe(201);
  expect((await from(ip, { code: batch.codes[0] })).status).toBe(409);
  expect((await from(ip, { code: 'LK-22222222-2222' })).status).toBe(404);
  expect((await from(ip, { code: batch.codes[1], email: 'not-an-address' })).status).toBe(400);
  expect((await from(ip, { code: batch.codes[1] })).status).toBe(201);

  const limited = await from(ip, { code: batch.codes[2] });
  expectError(limited, 429, 'REDEMPTION_RATE_LIMITED');
  expect(limited.headers.get('retry-after')).toBe('60');
  expect(limited.body.detail).toMatch(/rate limit exceeded/i);

  // The page's form counts against the same attempts.
  const page = await fetch(`${server.url}/redeem`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
    body: new URLSearchParams({ code: batch.codes[2]!, email: '' }),
  });
  expect(page.status).toBe(429);
  expect(page.headers.get('retry-after')).toBe('60');
  expect(await page.text()).toMatch(/Rate limit exceeded/);

  // The refused attempts redeemed nothing; another address still may.
  const other = await from('203.0.113.8', { code: batch.codes[2] });
  expect(other.status).toBe(201);
});
