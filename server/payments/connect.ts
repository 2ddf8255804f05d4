/**
 * Connecting a developer's processor account proves ownership: Stripe Connect OAuth. The developer
 * starts it signed in (POST /v1/payments/account/connect), the browser goes to the processor's
 * authorize page with a random `state`, the person approves there with their own processor login,
 * and the processor sends the browser back to GET /v1/payments/account/callback with a single-use
 * `code` and the state; the code, exchanged with the platform's secret key, names the account
 * (`stripe_user_id`). Nobody can connect an account by typing its id.
 *
 * The state is stored hashed, bound to the developer, the sign-in session (and portal session)
 * that started it and the browser (an HttpOnly cookie scoped to the callback path), single use,
 * 10 minutes: an authorize URL sent to someone else, a replayed or stale callback, connects nothing.
 */
import type Koa from 'koa';
import type { AccountDeactivation } from '../accounts/deactivation.js';
import type { Clock } from '../clock.js';
import { randomSecret, sha256Hex } from '../crypto/secrets.js';
import { RequestError } from '../errors.js';
import type { ConnectStore } from './connect-store.js';
import type { PaymentProcessor } from './processor.js';
import { askProcessor, requireProcessor, type PaymentsService } from './service.js';
import type { PaymentConnection } from './store.js';

export const CONNECT_STATE_TTL_MS = 10 * 60_000;
export const CONNECT_CALLBACK_PATH = '/v1/payments/account/callback';
/** The browser binding of a started connection, sent back only to the callback. */
export const CONNECT_COOKIE = 'lk_connect';
/** Where the browser lands after the callback: the portal's settings, with the result in `payments`. */
export const CONNECT_RESULT_PAGE = '/portal#/settings';

/** Sets the binding cookie on the response to the browser (the API's own, or the portal's that forwarded the start). */
export function setConnectCookie(ctx: Koa.Context, value: string): void {
  // SameSite=Lax: the processor sends the browser back with a top-level GET, which carries it.
  // Secure over TLS, and always when the public address is https (http/public-https.ts).
  ctx.cookies.set(CONNECT_COOKIE, value, {
    path: CONNECT_CALLBACK_PATH,
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.cookies.secure,
    maxAge: CONNECT_STATE_TTL_MS,
    overwrite: true,
  });
}

export function clearConnectCookie(ctx: Koa.Context): void {
  ctx.cookies.set(CONNECT_COOKIE, '', {
    path: CONNECT_CALLBACK_PATH,
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.cookies.secure,
    maxAge: 0,
    expires: new Date(0),
    overwrite: true,
  });
}

const REFUSALS = {
  unknown: ['PAYMENT_CONNECT_STATE_INVALID', 'This connection link is not one this server started: start connecting again from the portal'],
  used: ['PAYMENT_CONNECT_STATE_INVALID', 'This connection link was already used: start connecting again from the portal'],
  expired: ['PAYMENT_CONNECT_STATE_INVALID', 'This connection link expired (10 minutes): start connecting again from the portal'],
  other_browser: ['PAYMENT_CONNECT_STATE_MISMATCH', 'This connection was started in another browser or by another account: finish it where it was started, or start again here'],
  session_ended: ['PAYMENT_CONNECT_STATE_MISMATCH', 'The sign-in that started this connection has ended: sign in and start connecting again'],
} as const;

export interface CallbackQuery {
  state: string;
  code?: string | undefined;
  error?: string | undefined;
}

export type CallbackResult = { result: 'connected'; connection: PaymentConnection } | { result: 'access_denied' | 'declined' };

export function createProcessorConnect(deps: {
  store: ConnectStore;
  payments: PaymentsService;
  processor: PaymentProcessor | null;
  connectClientId: string | undefined;
  clock: Clock;
  publicBaseUrl: string;
  deactivation: Pick<AccountDeactivation, 'refuseChangesIfDeactivated'>;
}) {
  const { store, payments, clock } = deps;

  return {
    /** A new authorization for the signed-in developer: the URL to send the browser to, and the browser binding to set. */
    async start(developerId: string, sessionId: string) {
      const processor = requireProcessor(deps.processor);
      if (!deps.connectClientId) {
        throw new RequestError('PAYMENTS_NOT_CONFIGURED', "Connecting a Stripe account needs the platform's Connect client id (LATCHKEY_STRIPE_CONNECT_CLIENT_ID is unset)");
      }
      const state = randomSecret(32);
      const browserSecret = randomSecret(32);
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + CONNECT_STATE_TTL_MS);
      await store.insertState(
        {
          state_hash: sha256Hex(state),
          developer_id: developerId,
          session_id: sessionId,
          via_portal: await store.isPortalSession(sessionId),
          browser_hash: sha256Hex(browserSecret),
          expires_at: expiresAt,
        },
        now,
      );
      const authorizeUrl = processor.authorizeUrl({ state, redirectUri: `${deps.publicBaseUrl}${CONNECT_CALLBACK_PATH}` });
      return { authorize_url: authorizeUrl, expires_at: expiresAt.toISOString(), browserSecret };
    },

    /**
     * The processor's redirect back: spends the state (refused: nothing changes), then exchanges
     * the code for the account it names and connects that account, unless another developer has it.
     */
    async complete(query: CallbackQuery, browserSecret: string | undefined): Promise<CallbackResult> {
      const processor = requireProcessor(deps.processor);
      const outcome = await store.consumeState(sha256Hex(query.state), browserSecret ? sha256Hex(browserSecret) : null, clock.now());
      if (outcome.kind !== 'ok') {
        const [code, detail] = REFUSALS[outcome.kind];
        throw new RequestError(code, detail);
      }
      if (query.error !== undefined || query.code === undefined) return { result: query.error === 'access_denied' ? 'access_denied' : 'declined' };
      // The callback carries no developer credential, so mountRoutes does not ask: a connection
      // started before the account was deactivated does not complete after (accounts/deactivation.ts).
      await deps.deactivation.refuseChangesIfDeactivated(outcome.developerId);
      const code = query.code;
      const granted = await askProcessor(() => processor.exchangeAuthorizationCode(code));
      if (!granted) throw new RequestError('PAYMENT_AUTHORIZATION_FAILED', 'Stripe refused the authorization code (expired or already used): start connecting again');
      return { result: 'connected', connection: await payments.connect(outcome.developerId, granted.accountId) };
    },
  };
}

export type ProcessorConnect = ReturnType<typeof createProcessorConnect>;
