import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../server/crypto/secrets.js';
import { RATE_LIMITS } from '../../server/http/rate-limit.js';
import { createApp, randomFingerprint, registerDeveloper, setPlan } from '../support/fixtures.js';
import { client, formData } from '../support/http.js';
import { multipartParts, rawExchange } from '../support/raw-http.js';
import { startTestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';
import { cookieAttributes, PortalClient } from './support.js';

// The portal's HTTP contract without a browser: cookies, CSRF and Origin checks, the proxy's
// tenant isolation and token refresh. The browser tests (browser.test.ts) drive the pages.

const server = await startTestServer();
const call = client(server.url);
const db = server.database.db;
afterAll(() => server.close());

async function signedIn() {
  const dev = await registerDeveloper(call);
  const portal = new PortalClient(server.url);
  const res = await portal.signIn(dev.email, dev.password);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.signed_in).toBe(true);
  return { dev, portal };
}

describe('the shell and its files', () => {
  it('serves the page with a strict Content-Security-Policy and no inline script', async () => {
    const res = await fetch(`${server.url}/portal`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("require-trusted-types-for 'script'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style/);
  });

  it('serves the assets with their types, and 404 for anything else', async () => {
    const js = await fetch(`${server.url}/portal/assets/portal.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    const etag = js.headers.get('etag')!;
    expect((await fetch(`${server.url}/portal/assets/portal.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await fetch(`${server.url}/portal/assets/portal.css`)).headers.get('content-type')).toMatch(/^text\/css/);
    // The chart library's stylesheet comes from the origin too; its license travels with its code and its stylesheet.
    const chartStyles = await fetch(`${server.url}/portal/assets/uplot.css`);
    expect(chartStyles.headers.get('content-type')).toMatch(/^text\/css/);
    for (const file of [await js.text(), await chartStyles.text()]) expect(file).toMatch(/uplot\n\s*The MIT License \(MIT\)\n\s*\n\s*Copyright \(c\) 2022 Leon Sorokin/);
    for (const missing of ['/portal/assets/nope.js', '/portal/assets/..%2Findex.ts', '/portal/assets/../index.ts', '/portal/nowhere']) {
      expect((await fetch(`${server.url}${missing}`)).status).toBe(404);
    }
  });

  it('stays out of the OpenAPI document', async () => {
    const doc = (await call('GET', '/v1/openapi.json')).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/portal'))).toEqual([]);
  });
});

describe('session cookies', () => {
  it('are HttpOnly, SameSite=Lax, scoped to /portal, and not Secure over plain HTTP', async () => {
    const dev = await registerDeveloper(call);
    const portal = new PortalClient(server.url);
    const pre = await portal.refresh();
    const preCookie = cookieAttributes(pre.setCookies.find((l) => l.startsWith('lk_portal_pre='))!);
    const res = await portal.signIn(dev.email, dev.password);
    expect(res.status).toBe(200);
    const session = cookieAttributes(res.setCookies.find((l) => l.startsWith('lk_portal='))!);
    for (const cookie of [preCookie, session]) {
      expect(cookie.attrs.has('httponly')).toBe(true);
      expect(cookie.attrs.get('samesite')).toBe('lax');
      expect(cookie.attrs.get('path')).toBe('/portal');
      expect(cookie.attrs.has('secure')).toBe(false);
    }
    // A plain-http deployment (its public address is http) is not told to browsers as https-only.
    expect(res.headers.get('strict-transport-security')).toBeNull();
    // The body never carries a token; the database holds the id's hash and sealed tokens only.
    expect(JSON.stringify(res.body)).not.toContain(dev.accessToken.slice(0, 20));
    const row = await db('portal_sessions')
      .where({ id_hash: sha256Hex(session.value) })
      .first();
    expect(row.developer_id).toBe(dev.id);
    expect(row.access_token_sealed).toMatch(/^v1\./);
    expect(await db('portal_sessions').where({ id_hash: session.value }).first()).toBeUndefined();
  });

  it('are Secure behind an HTTPS proxy the app trusts', async () => {
    const behindProxy = await startTestServer({ env: { LATCHKEY_TRUST_PROXY: 'true' } });
    try {
      const dev = await registerDeveloper(client(behindProxy.url));
      const portal = new PortalClient(behindProxy.url, 'https://portal.example.com');
      const https = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'portal.example.com' };
      const pre = await portal.send('GET', '/portal/session', { headers: https });
      portal.csrf = pre.body.csrf_token;
      expect(pre.setCookies.every((l) => /;\s*secure/i.test(l))).toBe(true);
      const res = await portal.send('POST', '/portal/session/login', { headers: https, body: { email: dev.email, password: dev.password } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const session = cookieAttributes(res.setCookies.find((l) => l.startsWith('lk_portal='))!);
      expect(session.attrs.has('secure')).toBe(true);
      expect(session.attrs.has('httponly')).toBe(true);
      expect(session.attrs.get('samesite')).toBe('lax');
    } finally {
      await behindProxy.close();
    }
  });

  it('are Secure, and browsers told https only, when the public address is https, behind a proxy the app does not trust too', async () => {
    // The proxy terminating TLS is not in LATCHKEY_TRUST_PROXY: its X-Forwarded-Proto is not believed, the public address is.
    const httpsDeployment = await startTestServer({ env: { PUBLIC_BASE_URL: 'https://licenses.example.test' } });
    try {
      const dev = await registerDeveloper(client(httpsDeployment.url));
      const portal = new PortalClient(httpsDeployment.url, 'https://licenses.example.test');
      const pre = await portal.refresh();
      expect(pre.setCookies.length).toBeGreaterThan(0);
      expect(pre.setCookies.every((l) => /;\s*secure/i.test(l))).toBe(true);
      const res = await portal.signIn(dev.email, dev.password);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(cookieAttributes(res.setCookies.find((l) => l.startsWith('lk_portal='))!).attrs.has('secure')).toBe(true);
      expect(res.headers.get('strict-transport-security')).toBe('max-age=31536000');
      expect((await fetch(`${httpsDeployment.url}/portal`)).headers.get('strict-transport-security')).toBe('max-age=31536000');
    } finally {
      await httpsDeployment.close();
    }
  });

  it('signing out deletes the session: the old cookie no longer works', async () => {
    const { portal } = await signedIn();
    const cookie = portal.cookies.get('lk_portal')!;
    expect((await portal.api('GET', '/v1/apps')).status).toBe(200);
    const out = await portal.send('POST', '/portal/session/logout');
    expect(out.status).toBe(200);
    expect(
      await db('portal_sessions')
        .where({ id_hash: sha256Hex(cookie) })
        .first(),
    ).toBeUndefined();
    portal.cookies.set('lk_portal', cookie);
    portal.csrf = out.body.csrf_token;
    expect((await portal.api('GET', '/v1/apps')).status).toBe(401);
  });
});

describe('CSRF and Origin', () => {
  it('refuses sign-in without the pre-session token or with a wrong one', async () => {
    const dev = await registerDeveloper(call);
    const portal = new PortalClient(server.url);
    await portal.refresh();
    for (const csrf of [null, 'wrong', `${portal.csrf}x`]) {
      const res = await portal.send('POST', '/portal/session/login', { csrf, body: { email: dev.email, password: dev.password } });
      expect(res.status).toBe(403);
      expect(res.body.error_code).toBe('FORBIDDEN');
      expect(res.setCookies.some((l) => l.startsWith('lk_portal='))).toBe(false);
    }
  });

  it('refuses a state change without the token, with a wrong one, or from another origin, and changes nothing', async () => {
    const { dev, portal } = await signedIn();
    const body = { name: 'Forged', platforms: ['linux-x64'] };
    const other = await signedIn();
    const refusals = [
      await portal.api('POST', '/v1/apps', { body, csrf: null }),
      await portal.api('POST', '/v1/apps', { body, csrf: 'not-the-token' }),
      // Another session's token is not this session's.
      await portal.api('POST', '/v1/apps', { body, csrf: other.portal.csrf }),
      await portal.api('POST', '/v1/apps', { body, headers: { origin: 'https://evil.example' } }),
      await portal.api('POST', '/v1/apps', { body, headers: { origin: 'null' } }),
    ];
    for (const [i, res] of refusals.entries()) {
      expect(res.status, `refusal ${i}`).toBe(403);
      expect(res.body.error_code).toBe('FORBIDDEN');
      expect(res.body.detail).toBeTruthy();
    }
    // Without an Origin, a Referer of another site is refused too.
    const noOrigin = new PortalClient(server.url, null);
    noOrigin.cookies.set('lk_portal', portal.cookies.get('lk_portal')!);
    noOrigin.csrf = portal.csrf;
    expect((await noOrigin.api('POST', '/v1/apps', { body, headers: { referer: 'https://evil.example/page' } })).status).toBe(403);
    expect((await noOrigin.api('POST', '/v1/apps', { body })).status).toBe(403);
    expect((await call('GET', '/v1/apps', { token: dev.accessToken })).body).toEqual([]);

    const ok = await portal.api('POST', '/v1/apps', { body });
    expect(ok.status).toBe(201);
    expect((await call('GET', '/v1/apps', { token: dev.accessToken })).body.map((a: any) => a.name)).toEqual(['Forged']);
  });

  it('needs the token for reads through the proxy too, and refuses sign-out without it', async () => {
    const { portal } = await signedIn();
    expect((await portal.api('GET', '/v1/apps', { csrf: null })).status).toBe(403);
    expect((await portal.send('POST', '/portal/session/logout', { csrf: null })).status).toBe(403);
    expect((await portal.api('GET', '/v1/apps')).status).toBe(200);
  });
});

describe('the proxy', () => {
  it("answers 404 for another developer's resources and lists only the caller's", async () => {
    const a = await signedIn();
    const b = await signedIn();
    const app = await createApp(call, a.dev, { name: 'Secret App' });
    const license = (await call('POST', '/v1/licenses', { token: a.dev.accessToken, body: { app_id: app.id, license_type: 'trial' } })).body;
    for (const path of [`/v1/apps/${app.id}`, `/v1/apps/${app.id}/builds`, `/v1/licenses/${license.license_id}`, `/v1/apps/${app.id}/push-update`]) {
      const res = await b.portal.api('GET', path);
      expect(res.status, path).toBe(404);
    }
    expect((await b.portal.api('DELETE', `/v1/apps/${app.id}`)).status).toBe(404);
    expect((await b.portal.api('POST', `/v1/licenses/${license.license_id}/revoke`)).status).toBe(404);
    expect((await b.portal.api('GET', '/v1/apps')).body).toEqual([]);
    expect((await b.portal.api('GET', '/v1/licenses')).body).toEqual([]);
    expect((await call('GET', `/v1/licenses/${license.license_id}`, { token: a.dev.accessToken })).body.status).toBe('ACTIVE');
    expect((await a.portal.api('GET', `/v1/apps/${app.id}`)).body.name).toBe('Secret App');
  });

  it('passes the API answer through: status, error body, pagination total', async () => {
    const { portal } = await signedIn();
    const bad = await portal.api('POST', '/v1/apps', { body: { name: '', platforms: [] } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error_code: 'VALIDATION_FAILED', status_code: 400 });
    for (let i = 0; i < 3; i++) await portal.api('POST', '/v1/apps', { body: { name: `App ${i}`, platforms: ['linux-x64'] } });
    const page = await portal.api('GET', '/v1/apps?limit=2');
    expect(page.body).toHaveLength(2);
    expect(page.headers.get('x-total-count')).toBe('3');
    expect(page.headers.get('ratelimit-limit')).toBeTruthy();
  });

  it('streams a multipart upload to the API', async () => {
    const { portal } = await signedIn();
    const app = (await portal.api('POST', '/v1/apps', { body: { name: 'Uploader', platforms: ['linux-x64'] } })).body;
    const data = Buffer.alloc(3 * 1024 * 1024, 7);
    const res = await portal.api('POST', `/v1/apps/${app.id}/builds`, { raw: formData({ platform: 'linux-x64', version: '1.0.0' }, { artifact: { name: 'tool.bin', data } }) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.artifact_size_bytes).toBe(data.length);
  });

  it('streams request bodies: the API answers an upload while the browser is still sending it', async () => {
    const { portal } = await signedIn();
    // A body that never ends: were the proxy buffering it, no answer could come.
    const url = new URL(`${server.url}/portal/api/v1/apps/app_missing/builds`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: {
          cookie: [...portal.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
          'x-csrf-token': portal.csrf,
          origin: server.url,
          'content-type': 'multipart/form-data; boundary=xyz',
          'transfer-encoding': 'chunked',
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      req.write('--xyz\r\nContent-Disposition: form-data; name="platform"\r\n\r\nlinux-x64\r\n');
    });
    expect(status).toBe(404);
  });

  it('cuts off an upload whose browser left while the portal checked its session, instead of sending the API a body that never comes', async () => {
    const { portal } = await signedIn();
    const app = (await portal.api('POST', '/v1/apps', { body: { name: 'Gone', platforms: ['linux-x64'] } })).body;
    const form = multipartParts({ platform: 'linux-x64' }, 'artifact', 'gone.bin', Buffer.alloc(64 * 1024, 1));
    const cookie = [...portal.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const head =
      `POST /portal/api/v1/apps/${app.id}/builds HTTP/1.1\r\nHost: x\r\nCookie: ${cookie}\r\nX-CSRF-Token: ${portal.csrf}\r\nOrigin: ${server.url}\r\n` +
      `Content-Type: ${form.contentType}\r\nContent-Length: ${form.length}\r\n\r\n`;
    // Dropped as soon as its first bytes are out: the portal learns of it while it reads the session.
    expect((await rawExchange(server.url, [head, form.head, null])).status).toBe(0);
    // Answered 408 at once (the API's own body deadline would have taken 30 seconds).
    await eventually('the portal request counted as cut off', async () => {
      const text = String((await call('GET', '/metrics', { token: server.adminToken })).body);
      return text.includes(`method="POST",route="/portal/api/v1/apps/${app.id}/builds",status="408"} 1\n`);
    });
  });

  it('does not forward the sign-in, refresh or operator endpoints, nor paths that leave /v1', async () => {
    const { portal } = await signedIn();
    for (const path of [
      '/v1/auth/refresh',
      '/v1/auth/login',
      '/v1/auth/login/verify-2fa',
      '/v1/auth/register',
      '/v1/admin/developers/x/plan',
      '/v1/%2e%2e/healthz',
      '/v1/apps/%2e%2e%2fhealthz',
      '/healthz',
    ]) {
      const res = await portal.api('POST', path, { body: {} });
      expect(res.status, path).toBe(404);
    }
  });

  it('refreshes an expired access token through the refresh token, once, for concurrent requests', async () => {
    const { dev, portal } = await signedIn();
    const idHash = sha256Hex(portal.cookies.get('lk_portal')!);
    const before = await db('portal_sessions').where({ id_hash: idHash }).first();
    server.clock.advance(2 * 3600_000);
    const answers = await Promise.all(Array.from({ length: 5 }, () => portal.api('GET', '/v1/auth/me')));
    for (const res of answers) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.id).toBe(dev.id);
    }
    const after = await db('portal_sessions').where({ id_hash: idHash }).first();
    expect(after.refresh_token_sealed).not.toBe(before.refresh_token_sealed);
    expect(after.access_expires_at.getTime()).toBeGreaterThan(server.clock.now().getTime());
    // The login was not revoked by a reused refresh token: the next call still works.
    expect((await portal.api('GET', '/v1/apps')).status).toBe(200);
  });

  it('answers 401 without a session', async () => {
    const portal = new PortalClient(server.url);
    await portal.refresh();
    const res = await portal.api('GET', '/v1/apps');
    expect(res.status).toBe(401);
  });
});

describe('GET /v1/stats (the dashboard)', () => {
  it("counts the caller's data only, per day, and validates its query", async () => {
    const a = await registerDeveloper(call);
    const b = await registerDeveloper(call);
    const appA = await createApp(call, a);
    const created = await call('POST', '/v1/licenses', { token: a.accessToken, body: { app_id: appA.id, license_type: 'trial' } });
    const mine = await call('GET', '/v1/stats?days=7', { token: a.accessToken });
    expect(mine.status).toBe(200);
    expect(mine.body.licenses_created).toHaveLength(7);
    // The day the license says it was created on (earlier tests here move the server's clock by hours).
    const day = String(created.body.created_at).slice(0, 10);
    expect(mine.body.licenses_created.find((d: any) => d.date === day)).toEqual({ date: day, count: 1 });
    expect(mine.body.fees).toEqual([]);
    const theirs = await call('GET', '/v1/stats', { token: b.accessToken });
    expect(theirs.body.licenses_created).toHaveLength(30);
    expect(theirs.body.licenses_created.every((d: any) => d.count === 0)).toBe(true);
    expect((await call('GET', `/v1/stats?app_id=${appA.id}`, { token: b.accessToken })).status).toBe(404);
    for (const bad of ['days=0', 'days=400', 'days=abc']) expect((await call('GET', `/v1/stats?${bad}`, { token: a.accessToken })).status).toBe(400);
  });

  it('counts activations by first-seen day, licenses sold and the fees still owed, for one app when asked', async () => {
    const dev = await registerDeveloper(call);
    await setPlan(call, server.adminToken, dev.id, 'pro');
    const app = await createApp(call, dev);
    const other = await createApp(call, dev);
    const batch = await call('POST', `/v1/apps/${app.id}/redemption-batches`, { token: dev.accessToken, body: { channel: 'appsumo', quantity: 1 } });
    const redeemed = await call('POST', '/v1/public/redeem', { body: { code: batch.body.codes[0] } });
    expect(redeemed.status).toBe(201);
    const activated = await call('POST', '/v1/licenses/activate', { body: { license_key: redeemed.body.license_key, device_fingerprint: randomFingerprint(), build_id: null } });
    expect(activated.status).toBe(200);

    const today = server.clock.now().toISOString().slice(0, 10);
    const stats = (await call('GET', `/v1/stats?days=3&app_id=${app.id}`, { token: dev.accessToken })).body;
    expect(stats.activations.at(-1)).toEqual({ date: today, count: 1 });
    expect(stats.licenses_sold.at(-1)).toEqual({ date: today, count: 1 });
    // Without a payment processor the fee stays in the ledger, not reported: owed.
    expect(stats.fees).toEqual([{ currency: 'usd', period_cents: 400, period_licenses: 1, unbilled_cents: 400 }]);
    const otherApp = (await call('GET', `/v1/stats?days=3&app_id=${other.id}`, { token: dev.accessToken })).body;
    expect(otherApp.activations.at(-1)).toEqual({ date: today, count: 0 });
    expect(otherApp.fees).toEqual([]);
  });
});

describe('rate limits through the portal', () => {
  it('count sign-in attempts per browser address, not per server, and ignore a forged forwarding header', async () => {
    const limited = await startTestServer({ realRateLimits: true, env: { LATCHKEY_TRUST_PROXY: 'true' } });
    try {
      // The 11 sign-in attempts below must fall in one fixed window (CI once saw a minute turn between them).
      limited.clock.enterFreshWindow(RATE_LIMITS.auth.windowSeconds * 1000);
      const dev = await registerDeveloper(client(limited.url));
      const from = (ip: string) => ({ 'x-forwarded-for': ip });
      const a = new PortalClient(limited.url);
      const pre = await a.send('GET', '/portal/session', { headers: from('10.0.0.1') });
      a.csrf = pre.body.csrf_token;
      const statuses = [];
      for (let i = 0; i < 11; i++) {
        statuses.push((await a.send('POST', '/portal/session/login', { headers: from('10.0.0.1'), body: { email: dev.email, password: 'wrong-password' } })).status);
      }
      expect(statuses.slice(0, 10).every((st) => st === 401)).toBe(true);
      expect(statuses[10]).toBe(429);
      // Another browser address is not held to the first one's count.
      const b = new PortalClient(limited.url);
      b.csrf = (await b.send('GET', '/portal/session', { headers: from('10.0.0.2') })).body.csrf_token;
      expect((await b.send('POST', '/portal/session/login', { headers: from('10.0.0.2'), body: { email: dev.email, password: dev.password } })).status).toBe(200);
      // Claiming another address without the process's secret changes nothing.
      const forged = await fetch(`${limited.url}/v1/auth/login`, {
        method: 'POST',
        headers: { ...from('10.0.0.1'), 'x-latchkey-portal-forward': 'guess', 'x-latchkey-portal-client': '10.9.9.9', 'content-type': 'application/json' },
        body: JSON.stringify({ email: dev.email, password: dev.password }),
      });
      expect(forged.status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('sign-in with 2FA over HTTP', () => {
  it('holds the challenge server-side between the steps and refuses a wrong code', async () => {
    const { generate } = await import('otplib');
    const dev = await registerDeveloper(call);
    const setup = await call('POST', '/v1/auth/2fa/setup', { token: dev.accessToken, body: { password: dev.password } });
    const secret = new URL(setup.body.provisioning_uri).searchParams.get('secret')!;
    server.clock.advance(30_000);
    const code = () => generate({ secret, epoch: Math.floor(server.clock.now().getTime() / 1000) });
    expect((await call('POST', '/v1/auth/2fa/confirm', { token: dev.accessToken, body: { code: await code() } })).status).toBe(200);

    const portal = new PortalClient(server.url);
    const first = await portal.signIn(dev.email, dev.password);
    expect(first.body, JSON.stringify(first.body)).toEqual({ signed_in: false, two_factor_required: true });
    expect(JSON.stringify(first.body)).not.toContain('challenge');
    expect((await portal.refresh()).body.two_factor_pending).toBe(true);
    const wrong = await portal.send('POST', '/portal/session/verify-2fa', { body: { code: '000000' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error_code).toBe('INVALID_TWO_FACTOR_CODE');
    const backup = await portal.send('POST', '/portal/session/verify-2fa', { body: { code: setup.body.backup_codes[0] } });
    expect(backup.status, JSON.stringify(backup.body)).toBe(200);
    expect(backup.body.signed_in).toBe(true);
    portal.csrf = backup.body.csrf_token;
    expect((await portal.api('GET', '/v1/auth/me')).body.id).toBe(dev.id);
  });
});
