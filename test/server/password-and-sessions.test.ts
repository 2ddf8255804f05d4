import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeQuotedPrintable } from '../commerce/fake-smtp.js';
import { eventually } from '../support/wait.js';
import { PortalClient } from '../portal/support.js';
import { expectError } from '../support/assertions.js';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { enableTwoFactor } from '../support/two-factor.js';

let server: TestServer;
let call: Call;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
});
afterAll(() => server.close());

const NEW_PASSWORD = 'a brand new passphrase';

interface SentEmail {
  id: string;
  subject: string;
  /** The message as the mail client gets it, quoted-printable decoded. */
  raw: string;
}

/** The newest email of `kind` to `dev`, once the outbox sent it (the test server writes `.eml` files). */
function sentEmail(dev: TestDeveloper, kind: string, after = new Date(0)): Promise<SentEmail> {
  return eventually(`the ${kind} email to be sent`, async () => {
    const row = await server.database
      .db('email_outbox')
      .where({ developer_id: dev.id, kind, status: 'sent' })
      .where('created_at', '>', after)
      .orderBy('created_at', 'desc')
      .first();
    if (!row) return undefined;
    const raw = decodeQuotedPrintable(fs.readFileSync(path.join(server.dataDir, 'outbox', `${row.id}.eml`), 'utf8'));
    return { id: row.id, subject: row.subject, raw };
  });
}

/** Asks for a reset link for `dev` and reads its token out of the email. */
async function resetToken(dev: TestDeveloper): Promise<string> {
  const asked = new Date(Date.now() - 1000);
  const res = await call('POST', '/v1/auth/password-reset', { body: { email: dev.email.toUpperCase() } });
  expect(res.status).toBe(202);
  const email = await sentEmail(dev, 'password_reset', asked);
  const link = /(http:\/\/[^\s"<>]+\/reset-password\?token=(pr_[\w-]{43}))/.exec(email.raw);
  expect(link, email.raw).not.toBeNull();
  expect(link![1]!.startsWith(`${server.url}/reset-password?token=`)).toBe(true);
  return link![2]!;
}

const confirm = (token: string, newPassword = NEW_PASSWORD) => call('POST', '/v1/auth/password-reset/confirm', { body: { token, new_password: newPassword } });
const login = (dev: TestDeveloper, password: string) => call('POST', '/v1/auth/login', { body: { email: dev.email, password } });
const me = (token: string) => call('GET', '/v1/auth/me', { token });
const refresh = (refreshToken: string) => call('POST', '/v1/auth/refresh', { body: { refresh_token: refreshToken } });

/** A portal session of `dev` (the browser's cookie and CSRF token), working. */
async function portalSession(dev: TestDeveloper, password = dev.password): Promise<PortalClient> {
  const portal = new PortalClient(server.url);
  expect((await portal.signIn(dev.email, password)).status).toBe(200);
  expect((await portal.api('GET', '/v1/auth/me')).status).toBe(200);
  return portal;
}

describe('password reset', () => {
  it('answers 202 whether or not an account has the email', async () => {
    const unknown = await call('POST', '/v1/auth/password-reset', { body: { email: 'nobody-here@example.com' } });
    const dev = await registerDeveloper(call);
    const known = await call('POST', '/v1/auth/password-reset', { body: { email: dev.email } });
    expect([unknown.status, known.status]).toEqual([202, 202]);
    expect(unknown.body).toEqual(known.body);
    expectError(await call('POST', '/v1/auth/password-reset', { body: { email: 'not-an-address' } }), 400, 'VALIDATION_FAILED');
  });

  it('sets the password with the emailed link, once: a second use is refused', async () => {
    const dev = await registerDeveloper(call);
    const token = await resetToken(dev);
    // The stored email is sealed: the link is not in the database.
    const stored = await server.database.db('email_outbox').where({ developer_id: dev.id, kind: 'password_reset' }).first();
    expect(stored.sealed).toBe(true);
    expect(`${stored.text_body}${stored.html_body}`).not.toContain(token);

    expect((await confirm(token)).status).toBe(204);
    expectError(await login(dev, dev.password), 401, 'INVALID_CREDENTIALS');
    expect((await login(dev, NEW_PASSWORD)).status).toBe(200);
    expectError(await confirm(token, 'yet another passphrase'), 401, 'INVALID_RESET_TOKEN');
    expect((await login(dev, NEW_PASSWORD)).status).toBe(200);
  });

  it('refuses a link used after 15 minutes, and a made-up one', async () => {
    const dev = await registerDeveloper(call);
    const token = await resetToken(dev);
    server.clock.advance(15 * 60_000 + 1000);
    expectError(await confirm(token), 401, 'INVALID_RESET_TOKEN');
    expectError(await confirm(`pr_${'A'.repeat(43)}`), 401, 'INVALID_RESET_TOKEN');
    expect((await login(dev, dev.password)).status).toBe(200);
  });

  it('ends every session (access and refresh tokens, portal sessions) and emails the API keys to review', async () => {
    const dev = await registerDeveloper(call);
    const portal = await portalSession(dev);
    const other = (await login(dev, dev.password)).body;
    const token = await resetToken(dev);
    const before = new Date(Date.now() - 1000);
    expect((await confirm(token)).status).toBe(204);

    for (const accessToken of [dev.accessToken, other.access_token]) expectError(await me(accessToken), 401, 'UNAUTHORIZED');
    for (const refreshToken of [dev.refreshToken, other.refresh_token]) expectError(await refresh(refreshToken), 401, 'INVALID_REFRESH_TOKEN');
    expectError(await portal.api('GET', '/v1/auth/me'), 401, 'UNAUTHORIZED');
    expect(await server.database.db('portal_sessions').where({ developer_id: dev.id }).first()).toBeUndefined();
    // API keys keep working, and the owner is asked to review them.
    expect((await call('GET', '/v1/auth/me', { apiKey: dev.apiKey })).status).toBe(200);
    const notice = await sentEmail(dev, 'password_changed', before);
    expect(notice.subject).toMatch(/password was changed/);
    expect(notice.raw).toContain(`lk_${dev.apiKey.split('_')[1]} "API key" (admin): last used`);
    expect(notice.raw).toMatch(/reset through an emailed link\. Every session was signed out/);
  });

  it('lifts a lock of second-factor checks, and a reset link given twice works once', async () => {
    const dev = await registerDeveloper(call);
    await enableTwoFactor(call, server, dev);
    await server.database
      .db('developers')
      .where({ id: dev.id })
      .update({ two_factor_locked_until: new Date(server.clock.now().getTime() + 3600_000) });
    const token = await resetToken(dev);
    const results = await Promise.all([confirm(token), confirm(token, 'a racing passphrase')]);
    expect(results.map((r) => r.status).sort()).toEqual([204, 401]);
    expect((await server.database.db('developers').where({ id: dev.id }).first('two_factor_locked_until')).two_factor_locked_until).toBeNull();
  });

  it('takes 5 requests an hour per email address, wherever they come from', async () => {
    // Real limits, and addresses from X-Forwarded-For, so that the address's own limit is not what refuses.
    const limited = await startTestServer({ realRateLimits: true, env: { LATCHKEY_TRUST_PROXY: '127.0.0.1' } });
    try {
      // Just past the start of an hour: the counts start from zero and the window does not roll over under the test.
      limited.clock.enterFreshWindow(3600_000);
      const callLimited = client(limited.url);
      const dev = await registerDeveloper(callLimited);
      const ask = (from: string) => callLimited('POST', '/v1/auth/password-reset', { body: { email: dev.email }, headers: { 'x-forwarded-for': from } });
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await ask(`198.51.100.${i}`)).status);
      expect(statuses).toEqual([202, 202, 202, 202, 202, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('the hosted reset page', () => {
  const page = (pathAndQuery: string, form?: Record<string, string>) =>
    fetch(`${server.url}${pathAndQuery}`, form ? { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) } : {});

  it('shows the form for a live link, sets the password once, and says when the link no longer works', async () => {
    const dev = await registerDeveloper(call);
    const token = await resetToken(dev);
    const form = await page(`/reset-password?token=${token}`);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-security-policy')).toMatch(/default-src 'none'.*form-action 'self'/);
    expect(form.headers.get('referrer-policy')).toBe('no-referrer');
    expect(form.headers.get('cache-control')).toBe('no-store');
    const html = await form.text();
    expect(html).toContain(`name="token" value="${token}"`);
    expect(html).not.toMatch(/<script/);

    const differ = await page('/reset-password', { token, new_password: NEW_PASSWORD, repeat_password: `${NEW_PASSWORD}!` });
    expect(differ.status).toBe(400);
    expect(await differ.text()).toContain('The two passwords differ.');
    const set = await page('/reset-password', { token, new_password: NEW_PASSWORD, repeat_password: NEW_PASSWORD });
    expect(set.status).toBe(200);
    expect(await set.text()).toContain('id="password-set"');
    expect((await login(dev, NEW_PASSWORD)).status).toBe(200);

    const again = await page('/reset-password', { token, new_password: 'yet another passphrase', repeat_password: 'yet another passphrase' });
    expect(again.status).toBe(401);
    expect(await again.text()).toContain('invalid, expired or already used');
    expect((await page(`/reset-password?token=${token}`)).status).toBe(401);
  });

  it('asks for the email without a token and sends the link', async () => {
    const dev = await registerDeveloper(call);
    const ask = await page('/reset-password');
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain('action="/reset-password/request"');
    const before = new Date(Date.now() - 1000);
    const sent = await page('/reset-password/request', { email: dev.email });
    expect(sent.status).toBe(200);
    expect(await sent.text()).toContain('id="link-sent"');
    await sentEmail(dev, 'password_reset', before);
  });
});

describe('sessions end', () => {
  it('when the password changes: every other session, not this one; the old password no longer works', async () => {
    const dev = await registerDeveloper(call);
    const portal = await portalSession(dev);
    const other = (await login(dev, dev.password)).body;
    const res = await call('POST', '/v1/auth/password', { token: dev.accessToken, body: { password: dev.password, new_password: NEW_PASSWORD } });
    expect(res.status).toBe(204);

    expect((await me(dev.accessToken)).status).toBe(200);
    expect((await refresh(dev.refreshToken)).status).toBe(200);
    expectError(await me(other.access_token), 401, 'UNAUTHORIZED');
    expectError(await refresh(other.refresh_token), 401, 'INVALID_REFRESH_TOKEN');
    expectError(await portal.api('GET', '/v1/auth/me'), 401, 'UNAUTHORIZED');
    expectError(await login(dev, dev.password), 401, 'INVALID_CREDENTIALS');
    expect((await sentEmail(dev, 'password_changed')).raw).toMatch(/was changed\. Every other session was signed out/);
  });

  it('when the portal changes the password, its own session stays', async () => {
    const dev = await registerDeveloper(call);
    const portal = await portalSession(dev);
    const res = await portal.api('POST', '/v1/auth/password', { body: { password: dev.password, new_password: NEW_PASSWORD } });
    expect(res.status).toBe(204);
    expect((await portal.api('GET', '/v1/auth/me')).status).toBe(200);
    expectError(await me(dev.accessToken), 401, 'UNAUTHORIZED');
  });

  it('when 2FA is turned on: every other session, not the one that turned it on', async () => {
    const dev = await registerDeveloper(call);
    const portal = await portalSession(dev);
    const other = (await login(dev, dev.password)).body;
    await enableTwoFactor(call, server, dev);
    expect((await me(dev.accessToken)).status).toBe(200);
    expectError(await me(other.access_token), 401, 'UNAUTHORIZED');
    expectError(await refresh(other.refresh_token), 401, 'INVALID_REFRESH_TOKEN');
    expectError(await portal.api('GET', '/v1/auth/me'), 401, 'UNAUTHORIZED');
  });
});
