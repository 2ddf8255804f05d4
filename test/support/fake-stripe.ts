import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { closeNow, listenOnLoopback } from './local-http.js';

export const FAKE_STRIPE_SECRET_KEY = `sk_test_fake${randomBytes(8).toString('hex')}`;
export const FAKE_STRIPE_WEBHOOK_SECRET = `whsec_fake${randomBytes(16).toString('hex')}`;
export const FAKE_CONNECT_CLIENT_ID = `ca_fake${randomBytes(8).toString('hex')}`;

export interface FakePrice {
  id: string;
  type?: 'one_time' | 'recurring';
  billing_scheme?: 'per_unit' | 'tiered';
  unit_amount?: number | null;
  currency?: string;
  active?: boolean;
  recurring?: { interval: 'day' | 'week' | 'month' | 'year'; usage_type: 'licensed' | 'metered' } | null;
}

export interface FakeSession {
  id: string;
  price_id: string;
  payment_status?: 'paid' | 'unpaid';
  mode?: 'payment' | 'subscription';
  email?: string | null;
  metadata?: Record<string, string>;
  /** `application`: the Connect application that made a link this fake did not (Route C); null, the account itself. */
  payment_link?: { id: string; application_fee_percent: number | null; application?: string | null } | null;
  /** The session's currency (its price's); default `usd`. */
  currency?: string;
  livemode?: boolean;
  /** The subscription a `subscription` session started; its period end is in Unix seconds. */
  subscription?: { id: string; current_period_end: number };
}

export interface FakePaymentLink {
  id: string;
  account: string;
  url: string;
  active: boolean;
  params: Record<string, string>;
}

export interface FakeCreatedSession {
  id: string;
  account: string;
  url: string;
  params: Record<string, string>;
}

export interface FakeMeterEvent {
  identifier: string;
  event_name: string;
  payload: Record<string, string>;
  idempotencyKey: string | undefined;
}

const now = () => Math.floor(Date.now() / 1000);
const fakeId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** Stripe's form encoding flattened: `line_items[0][price]` stays a key, as the tests read it. */
const formParams = (body: string) => Object.fromEntries(new URLSearchParams(body));

/** The nested `prefix[key]` entries of a flattened form, as an object. */
const nested = (params: Record<string, string>, prefix: string) =>
  Object.fromEntries(
    Object.entries(params)
      .filter(([k]) => k.startsWith(`${prefix}[`))
      .map(([k, v]) => [k.slice(prefix.length + 1, -1), v]),
  );

/**
 * A local stand-in for the Stripe API, for the `stripe` package: only the endpoints the service
 * calls, Stripe's JSON shapes and error shapes, connected accounts through the Stripe-Account
 * header. Tests add accounts, Prices and checkout sessions, and can make it fail like an outage.
 */
export async function startFakeStripe() {
  const accounts = new Set<string>();
  const prices = new Map<string, FakePrice>(); // `${account} ${price id}`
  const sessions = new Map<string, FakeSession>(); // `${account} ${session id}`
  const state = { outage: false, requests: [] as string[] };
  const paymentLinks = new Map<string, FakePaymentLink>(); // by id (ids are unique across accounts)
  const createdSessions = new Map<string, FakeCreatedSession>(); // by id
  /** Billing meter events by `identifier`: Stripe records one event per identifier. */
  const meterEvents = new Map<string, FakeMeterEvent>();
  /** Connect OAuth: unspent authorization codes and the account each was issued for; accounts deauthorized. */
  const authorizationCodes = new Map<string, string>();
  const deauthorized: string[] = [];
  /**
   * What the person does on the authorize page a browser is sent to: approve for this account, or
   * decline (null: Stripe redirects back with `error=access_denied`).
   */
  const authorizePage = { account: null as string | null };
  const grantCode = (account: string) => {
    accounts.add(account);
    const code = `ac_${randomBytes(12).toString('hex')}`;
    authorizationCodes.set(code, account);
    return code;
  };
  /** Connect OAuth errors have their own shape: `error` is a string, `error_description` the words. */
  const oauthError = (res: ServerResponse, status: number, error: string, description: string) => send(res, status, { error, error_description: description });

  function revokeAccess(account: string) {
    deauthorized.push(account);
    accounts.delete(account);
  }

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(6).toString('hex')}` });
    res.end(JSON.stringify(body));
  };
  const missing = (res: ServerResponse, what: string, id: string) =>
    send(res, 404, { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${what}: '${id}'`, param: 'id' } });

  function priceObject(p: FakePrice) {
    const type = p.type ?? 'one_time';
    return {
      id: p.id,
      object: 'price',
      active: p.active ?? true,
      billing_scheme: p.billing_scheme ?? 'per_unit',
      currency: p.currency ?? 'usd',
      livemode: false,
      metadata: {},
      product: 'prod_fake',
      type,
      unit_amount: p.unit_amount === undefined ? 1900 : p.unit_amount,
      recurring: type === 'recurring' ? { interval: 'month', interval_count: 1, usage_type: 'licensed', ...p.recurring } : null,
    };
  }

  function sessionObject(s: FakeSession) {
    return {
      id: s.id,
      object: 'checkout.session',
      livemode: s.livemode ?? true,
      mode: s.mode ?? 'payment',
      currency: s.currency ?? 'usd',
      status: 'complete',
      payment_status: s.payment_status ?? 'paid',
      customer_email: null,
      metadata: s.metadata ?? {},
      customer_details: { email: s.email === undefined ? 'buyer@example.com' : s.email },
      payment_link: s.payment_link
        ? {
            id: s.payment_link.id,
            object: 'payment_link',
            application_fee_percent: s.payment_link.application_fee_percent,
            // A link this fake created (Route A) is the platform's, with the fixed fee it was created with.
            application: paymentLinks.has(s.payment_link.id) ? FAKE_CONNECT_CLIENT_ID : (s.payment_link.application ?? null),
            application_fee_amount: paymentLinkFee(s.payment_link.id),
          }
        : null,
      line_items: {
        object: 'list',
        has_more: false,
        url: `/v1/checkout/sessions/${s.id}/line_items`,
        data: [{ id: 'li_fake', object: 'item', quantity: 1, price: priceObject({ id: s.price_id }) }],
      },
      // Expanded, as the service asks: the period end lives on the subscription's items.
      subscription: s.subscription
        ? {
            id: s.subscription.id,
            object: 'subscription',
            status: 'active',
            items: { object: 'list', has_more: false, data: [{ id: 'si_fake', object: 'subscription_item', current_period_end: s.subscription.current_period_end }] },
          }
        : null,
    };
  }

  function paymentLinkFee(id: string): number | null {
    const fee = paymentLinks.get(id)?.params.application_fee_amount;
    return fee === undefined ? null : Number(fee);
  }

  function paymentLinkObject(link: FakePaymentLink) {
    const fee = link.params.application_fee_amount;
    return {
      id: link.id,
      object: 'payment_link',
      active: link.active,
      livemode: false,
      url: link.url,
      metadata: nested(link.params, 'metadata'),
      application: FAKE_CONNECT_CLIENT_ID,
      application_fee_amount: fee === undefined ? null : Number(fee),
      application_fee_percent: null,
      after_completion: { type: 'redirect', redirect: { url: link.params['after_completion[redirect][url]'] } },
    };
  }

  /** The POST endpoints: Route A's links, Route B's sessions, the fee reporter's meter events. */
  function routePost(req: IncomingMessage, res: ServerResponse, path: string, account: string, params: Record<string, string>) {
    let m: RegExpExecArray | null;
    if (path === '/v1/payment_links') {
      if (!prices.has(`${account} ${params['line_items[0][price]']}`)) return missing(res, 'price', String(params['line_items[0][price]']));
      const id = fakeId('plink');
      const link = { id, account, url: `https://buy.stripe.test/${id}`, active: true, params };
      paymentLinks.set(id, link);
      return send(res, 200, paymentLinkObject(link));
    }
    if ((m = /^\/v1\/payment_links\/([^/]+)$/.exec(path))) {
      const link = paymentLinks.get(decodeURIComponent(m[1]!));
      if (!link || link.account !== account) return missing(res, 'payment_link', decodeURIComponent(m[1]!));
      if (params.active !== undefined) link.active = params.active === 'true';
      return send(res, 200, paymentLinkObject(link));
    }
    if (path === '/v1/checkout/sessions') {
      if (!prices.has(`${account} ${params['line_items[0][price]']}`)) return missing(res, 'price', String(params['line_items[0][price]']));
      const id = `cs_test_${randomBytes(16).toString('hex')}`;
      const created = { id, account, url: `https://checkout.stripe.test/c/pay/${id}`, params };
      createdSessions.set(id, created);
      return send(res, 200, {
        id,
        object: 'checkout.session',
        url: created.url,
        mode: params.mode,
        status: 'open',
        expires_at: Number(params.expires_at),
        metadata: nested(params, 'metadata'),
      });
    }
    if (path === '/oauth/token') {
      if (params.grant_type !== 'authorization_code') return oauthError(res, 400, 'unsupported_grant_type', `Unsupported grant type: ${params.grant_type}`);
      const granted = authorizationCodes.get(String(params.code));
      if (!granted) return oauthError(res, 400, 'invalid_grant', `Authorization code does not exist: ${params.code}`);
      authorizationCodes.delete(String(params.code)); // single use
      return send(res, 200, {
        access_token: `sk_test_conn${randomBytes(8).toString('hex')}`,
        livemode: false,
        refresh_token: `rt_${randomBytes(12).toString('hex')}`,
        token_type: 'bearer',
        stripe_publishable_key: `pk_test_${randomBytes(8).toString('hex')}`,
        stripe_user_id: granted,
        scope: 'read_write',
      });
    }
    if (path === '/oauth/deauthorize') {
      if (params.client_id !== FAKE_CONNECT_CLIENT_ID) return oauthError(res, 401, 'invalid_client', `No such application: '${params.client_id}'`);
      const id = String(params.stripe_user_id);
      if (!accounts.has(id)) return oauthError(res, 401, 'invalid_client', `This application is not connected to stripe account ${id}, or that account does not exist.`);
      revokeAccess(id);
      return send(res, 200, { stripe_user_id: id });
    }
    if (path === '/v1/billing/meter_events') {
      const identifier = params.identifier ?? fakeId('mev');
      if (!meterEvents.has(identifier)) {
        meterEvents.set(identifier, {
          identifier,
          event_name: String(params.event_name),
          payload: nested(params, 'payload'),
          idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        });
      }
      return send(res, 200, {
        object: 'billing.meter_event',
        identifier,
        event_name: params.event_name,
        livemode: false,
        created: now(),
        payload: nested(params, 'payload'),
        timestamp: now(),
      });
    }
    return send(res, 404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (POST: ${path})` } });
  }

  function route(req: IncomingMessage, res: ServerResponse, body: string) {
    const url = new URL(req.url ?? '/', 'http://fake');
    state.requests.push(`${req.method} ${url.pathname}`);
    // Connect OAuth's authorize page, opened by a person's browser (no API key): it answers as the person chose.
    if (req.method === 'GET' && url.pathname === '/oauth/authorize') return authorize(res, url.searchParams);
    if (req.headers.authorization !== `Bearer ${FAKE_STRIPE_SECRET_KEY}`) {
      return send(res, 401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
    }
    if (state.outage) return send(res, 500, { error: { type: 'api_error', message: 'An unknown error occurred' } });
    const account = String(req.headers['stripe-account'] ?? '');
    // As Stripe answers a platform whose access the account revoked (and that has not connected it again).
    if (account && deauthorized.includes(account) && !accounts.has(account)) {
      return send(res, 403, {
        error: {
          type: 'invalid_request_error',
          code: 'account_invalid',
          message: `The provided key does not have access to account '${account}' (or that account does not exist).`,
        },
      });
    }
    if (req.method === 'POST') return routePost(req, res, url.pathname, account, formParams(body));
    let m: RegExpExecArray | null;
    if (req.method === 'GET' && (m = /^\/v1\/accounts\/([^/]+)$/.exec(url.pathname))) {
      const id = decodeURIComponent(m[1]!);
      return accounts.has(id) ? send(res, 200, { id, object: 'account', charges_enabled: true, created: now() }) : missing(res, 'account', id);
    }
    if (req.method === 'GET' && (m = /^\/v1\/prices\/([^/]+)$/.exec(url.pathname))) {
      const price = prices.get(`${account} ${decodeURIComponent(m[1]!)}`);
      return price ? send(res, 200, priceObject(price)) : missing(res, 'price', decodeURIComponent(m[1]!));
    }
    if (req.method === 'GET' && (m = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(url.pathname))) {
      const session = sessions.get(`${account} ${decodeURIComponent(m[1]!)}`);
      return session ? send(res, 200, sessionObject(session)) : missing(res, 'checkout.session', decodeURIComponent(m[1]!));
    }
    return send(res, 404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname})` } });
  }

  function authorize(res: ServerResponse, query: URLSearchParams) {
    const redirect = query.get('redirect_uri');
    if (query.get('client_id') !== FAKE_CONNECT_CLIENT_ID || query.get('response_type') !== 'code' || !redirect) {
      return oauthError(res, 400, 'invalid_request', 'Unknown client_id, or no response_type=code or redirect_uri');
    }
    const back = new URL(redirect);
    if (authorizePage.account) back.searchParams.set('code', grantCode(authorizePage.account));
    else back.search = new URLSearchParams({ error: 'access_denied', error_description: 'The user denied your request' }).toString();
    back.searchParams.set('state', query.get('state') ?? '');
    res.writeHead(302, { location: back.href });
    res.end();
  }

  const server = createServer((req, res) => {
    // Stripe's requests are form-encoded.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => route(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  const url = await listenOnLoopback(server);
  return {
    url,
    state,
    addAccount: (id = `acct_${randomBytes(8).toString('hex')}`) => (accounts.add(id), id),
    /** The account's owner removes this platform in their Stripe dashboard (or the platform deauthorizes it). */
    revokeAccess,
    addPrice: (account: string, price: FakePrice) => prices.set(`${account} ${price.id}`, price),
    addSession: (account: string, session: FakeSession) => sessions.set(`${account} ${session.id}`, session),
    paymentLinks,
    createdSessions,
    meterEvents,
    /** Connect OAuth: the code Stripe's authorize page would send back once the person approved for `account`. */
    grantCode,
    authorizePage,
    deauthorized,
    /** Environment for startTestServer: the server's Stripe client talks to this fake. */
    env: {
      LATCHKEY_STRIPE_SECRET_KEY: FAKE_STRIPE_SECRET_KEY,
      LATCHKEY_STRIPE_WEBHOOK_SECRET: FAKE_STRIPE_WEBHOOK_SECRET,
      LATCHKEY_STRIPE_API_BASE: url,
      LATCHKEY_STRIPE_CONNECT_CLIENT_ID: FAKE_CONNECT_CLIENT_ID,
    },
    close: () => closeNow(server),
  };
}

export type FakeStripe = Awaited<ReturnType<typeof startFakeStripe>>;

const signer = new Stripe(FAKE_STRIPE_SECRET_KEY);

/** A Stripe event as the processor delivers it: JSON body and `Stripe-Signature` with Stripe's real scheme. */
export function signedEvent(event: Record<string, unknown>, options: { secret?: string; timestamp?: number } = {}) {
  const payload = JSON.stringify({ object: 'event', api_version: '2026-10-28.endive', livemode: true, created: now(), ...event });
  const header = signer.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? FAKE_STRIPE_WEBHOOK_SECRET, timestamp: options.timestamp });
  return { payload, header };
}

export const newEventId = () => `evt_${randomBytes(12).toString('hex')}`;
export const newSessionId = () => `cs_test_${randomBytes(16).toString('hex')}`;
export const newSubscriptionId = () => `sub_${randomBytes(12).toString('hex')}`;
