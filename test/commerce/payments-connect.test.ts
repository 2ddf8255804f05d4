import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { connectAccount, connectCallback, startConnect } from '../support/connect-account.js';
import { FAKE_CONNECT_CLIENT_ID } from '../support/fake-stripe.js';
import { registerDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { startServerWithStripe } from '../support/stripe-server.js';

// Connecting a Stripe account proves ownership by Stripe Connect OAuth (docs/contract.md, Payment
// processor account): nobody connects an account by typing its id. Stripe is the local fake, at its protocol.
const { stripe, server, call } = await startServerWithStripe();
const CALLBACK = `${server.url}/v1/payments/account/callback`;

const accountOf = async (token: string) => (await call('GET', '/v1/payments/account', { token })).body;
const tokenExchanges = () => stripe.state.requests.filter((r) => r === 'POST /oauth/token').length;

describe('connecting a Stripe account by Connect OAuth', () => {
  it("connects the account Stripe's authorization names, through the browser's round trip, and disconnects it at Stripe too", async () => {
    const dev = await registerDeveloper(call);
    expect(await accountOf(dev.accessToken)).toEqual({ connected: false, account_id: null, connected_at: null });
    const started = await startConnect(server.url, { token: dev.accessToken });
    expect(started.status).toBe(200);
    const url = started.authorizeUrl!;
    expect(`${url.origin}${url.pathname}`).toBe(`${stripe.url}/oauth/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: FAKE_CONNECT_CLIENT_ID,
      scope: 'read_write',
      state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      redirect_uri: CALLBACK,
    });
    const expiresIn = Date.parse(started.body.expires_at) - server.clock.now().getTime();
    expect(expiresIn).toBeGreaterThan(9 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(10 * 60_000);
    // The browser binding: only the callback ever receives it, and no script can read it.
    const setCookie = (await fetch(`${server.url}/v1/payments/account/connect`, { method: 'POST', headers: { authorization: `Bearer ${dev.accessToken}` } })).headers
      .getSetCookie()
      .join('\n');
    expect(setCookie).toMatch(/lk_connect=[A-Za-z0-9_-]{43}; path=\/v1\/payments\/account\/callback; .*samesite=lax; httponly/i);

    // The person approves on Stripe's page, which sends the browser back with a code and the state.
    const account = stripe.addAccount();
    stripe.authorizePage.account = account;
    const toStripe = await fetch(url, { redirect: 'manual' });
    expect(toStripe.status).toBe(302);
    const back = new URL(toStripe.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
    const exchangesBefore = tokenExchanges();
    const landed = await connectCallback(server.url, Object.fromEntries(back.searchParams), started.cookie);
    expect(landed.status).toBe(303);
    expect(landed.location).toBe(`${server.url}/portal#/settings?payments=connected`);
    expect(tokenExchanges()).toBe(exchangesBefore + 1);
    expect(await accountOf(dev.accessToken)).toMatchObject({ connected: true, account_id: account });

    const del = await call('DELETE', '/v1/payments/account', { token: dev.accessToken });
    expect(del.body).toEqual({ connected: false, account_id: null, connected_at: null });
    expect(stripe.deauthorized).toContain(account);
  });

  it('refuses a typed account id (no PUT any more) and an API key: connecting takes a signed-in person', async () => {
    const dev = await registerDeveloper(call);
    const account = stripe.addAccount();
    const put = await call('PUT', '/v1/payments/account', { token: dev.accessToken, body: { account_id: account } });
    expect(put.status).toBe(405);
    expectError(await call('POST', '/v1/payments/account/connect', { apiKey: dev.apiKey }), 403, 'SESSION_REQUIRED');
    expect((await accountOf(dev.accessToken)).connected).toBe(false);
  });

  it('refuses (409) an account another developer has connected, and leaves both as they were', async () => {
    const owner = await registerDeveloper(call);
    const account = await connectAccount(server.url, stripe, owner.accessToken);
    const intruder = await registerDeveloper(call);
    const started = await startConnect(server.url, { token: intruder.accessToken });
    // Even with a genuine authorization for that account (say it was shared with them on Stripe).
    const res = await connectCallback(server.url, { code: stripe.grantCode(account), state: started.state! }, started.cookie);
    expectError(res, 409, 'PAYMENT_ACCOUNT_IN_USE');
    expect((await accountOf(intruder.accessToken)).connected).toBe(false);
    expect((await accountOf(owner.accessToken)).account_id).toBe(account);
  });

  it('gives an account connected before ownership was proven (an id typed in) to the developer who proves it', async () => {
    const squatter = await registerDeveloper(call);
    const owner = await registerDeveloper(call);
    const account = stripe.addAccount();
    // What the removed typed-id PUT left behind: a connection nobody proved (migration 016 marks it so).
    await server.database.db('developers').where({ id: squatter.id }).update({ payment_account_id: account, payment_connected_at: new Date() });
    expect((await accountOf(squatter.accessToken)).account_id).toBe(account);

    await connectAccount(server.url, stripe, owner.accessToken, account);
    expect((await accountOf(owner.accessToken)).account_id).toBe(account);
    expect(await accountOf(squatter.accessToken)).toEqual({ connected: false, account_id: null, connected_at: null });
    // Once proven, it is the owner's: the squatter's own proof of it (if Stripe ever granted one) is refused.
    const started = await startConnect(server.url, { token: squatter.accessToken });
    expectError(await connectCallback(server.url, { code: stripe.grantCode(account), state: started.state! }, started.cookie), 409, 'PAYMENT_ACCOUNT_IN_USE');
  });

  it("refuses another developer's or another browser's state, and one whose sign-in has ended, changing nothing", async () => {
    const victim = await registerDeveloper(call);
    const attacker = await registerDeveloper(call);
    // The attacker starts a connection and sends its authorize URL to the victim, who approves their own account.
    const attackers = await startConnect(server.url, { token: attacker.accessToken });
    const victimsOwn = await startConnect(server.url, { token: victim.accessToken });
    const victimAccount = stripe.addAccount();
    const exchangesBefore = tokenExchanges();
    for (const cookie of [victimsOwn.cookie, null]) {
      const res = await connectCallback(server.url, { code: stripe.grantCode(victimAccount), state: attackers.state! }, cookie);
      expectError(res, 403, 'PAYMENT_CONNECT_STATE_MISMATCH');
    }
    // The victim's state in the attacker's browser: refused too.
    expectError(await connectCallback(server.url, { code: stripe.grantCode(victimAccount), state: victimsOwn.state! }, attackers.cookie), 403, 'PAYMENT_CONNECT_STATE_MISMATCH');
    expect(tokenExchanges()).toBe(exchangesBefore);
    expect((await accountOf(attacker.accessToken)).connected).toBe(false);
    expect((await accountOf(victim.accessToken)).connected).toBe(false);
    // Nothing was spent: the victim's own flow, in the victim's browser, still completes.
    expect((await connectCallback(server.url, { code: stripe.grantCode(victimAccount), state: victimsOwn.state! }, victimsOwn.cookie)).status).toBe(303);
    expect((await accountOf(victim.accessToken)).account_id).toBe(victimAccount);

    // A sign-in that ended (a password change elsewhere ends every other session) takes its connections with it.
    const dev = await registerDeveloper(call);
    const started = await startConnect(server.url, { token: dev.accessToken });
    const other = await call('POST', '/v1/auth/login', { body: { email: dev.email, password: dev.password } });
    const changed = await call('POST', '/v1/auth/password', { token: other.body.access_token, body: { password: dev.password, new_password: `${dev.password}-new` } });
    expect(changed.status).toBe(204);
    expectError(await connectCallback(server.url, { code: stripe.grantCode(stripe.addAccount()), state: started.state! }, started.cookie), 403, 'PAYMENT_CONNECT_STATE_MISMATCH');
    expect((await accountOf(other.body.access_token)).connected).toBe(false);
  });

  it('spends a state once: of two concurrent callbacks one connects, and a replay is refused', async () => {
    const dev = await registerDeveloper(call);
    const account = stripe.addAccount();
    const started = await startConnect(server.url, { token: dev.accessToken });
    const code = stripe.grantCode(account);
    const exchangesBefore = tokenExchanges();
    const both = await Promise.all([1, 2].map(() => connectCallback(server.url, { code, state: started.state! }, started.cookie)));
    expect(both.map((r) => r.status).sort()).toEqual([303, 400]);
    expectError(
      both.find((r) => r.status === 400)!,
      400,
      'PAYMENT_CONNECT_STATE_INVALID',
    );
    expect(tokenExchanges()).toBe(exchangesBefore + 1);
    expect((await accountOf(dev.accessToken)).account_id).toBe(account);

    const replay = await connectCallback(server.url, { code: stripe.grantCode(stripe.addAccount()), state: started.state! }, started.cookie);
    expectError(replay, 400, 'PAYMENT_CONNECT_STATE_INVALID');
    expect(replay.body.detail).toMatch(/already used/);
    expect((await accountOf(dev.accessToken)).account_id).toBe(account);
  });

  it('refuses a state past its 10 minutes, and a state this server never issued (an HTML page for a browser)', async () => {
    const dev = await registerDeveloper(call);
    const started = await startConnect(server.url, { token: dev.accessToken });
    server.clock.advance(10 * 60_000 + 1000);
    const exchangesBefore = tokenExchanges();
    const late = await connectCallback(server.url, { code: stripe.grantCode(stripe.addAccount()), state: started.state! }, started.cookie);
    expectError(late, 400, 'PAYMENT_CONNECT_STATE_INVALID');
    expect(late.body.detail).toMatch(/expired/);
    expect(tokenExchanges()).toBe(exchangesBefore);
    expect((await accountOf(dev.accessToken)).connected).toBe(false);

    const forged = await connectCallback(server.url, { code: 'ac_forged', state: 'A'.repeat(43) }, started.cookie, 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(forged.status).toBe(400);
    expect(forged.headers.get('content-type')).toMatch(/text\/html/);
    expect(forged.body).toMatch(/start connecting again/);
    expectError(await connectCallback(server.url, { code: 'ac_x', state: 'short' }, started.cookie), 400, 'VALIDATION_FAILED');
  });

  it('access_denied on Stripe: nothing connected, the browser goes back to the portal with the result, and the state is spent', async () => {
    const dev = await registerDeveloper(call);
    const started = await startConnect(server.url, { token: dev.accessToken });
    stripe.authorizePage.account = null;
    const toStripe = await fetch(started.authorizeUrl!, { redirect: 'manual' });
    const back = new URL(toStripe.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('access_denied');
    const landed = await connectCallback(server.url, Object.fromEntries(back.searchParams), started.cookie);
    expect(landed.status).toBe(303);
    expect(landed.location).toBe(`${server.url}/portal#/settings?payments=access_denied`);
    expect((await accountOf(dev.accessToken)).connected).toBe(false);
    expectError(await connectCallback(server.url, { code: stripe.grantCode(stripe.addAccount()), state: started.state! }, started.cookie), 400, 'PAYMENT_CONNECT_STATE_INVALID');
  });

  it('a code Stripe refuses answers 400, an outage 503; neither connects anything', async () => {
    const dev = await registerDeveloper(call);
    const refused = await startConnect(server.url, { token: dev.accessToken });
    expectError(await connectCallback(server.url, { code: 'ac_neverissued', state: refused.state! }, refused.cookie), 400, 'PAYMENT_AUTHORIZATION_FAILED');
    const started = await startConnect(server.url, { token: dev.accessToken });
    stripe.state.outage = true;
    try {
      expectError(await connectCallback(server.url, { code: stripe.grantCode(stripe.addAccount()), state: started.state! }, started.cookie), 503, 'PAYMENT_PROCESSOR_UNAVAILABLE');
    } finally {
      stripe.state.outage = false;
    }
    expect((await accountOf(dev.accessToken)).connected).toBe(false);
  });

  it('answers 503 PAYMENTS_NOT_CONFIGURED without a Stripe key, and without the Connect client id', async () => {
    for (const env of [{}, { ...stripe.env, LATCHKEY_STRIPE_CONNECT_CLIENT_ID: undefined }]) {
      const bare = await startTestServer({ env: env as Record<string, string> });
      try {
        const bareCall = client(bare.url);
        const dev = await registerDeveloper(bareCall);
        const res = await bareCall('POST', '/v1/payments/account/connect', { token: dev.accessToken });
        expectError(res, 503, 'PAYMENTS_NOT_CONFIGURED');
      } finally {
        await bare.close();
      }
    }
  });
});
