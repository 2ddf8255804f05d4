import type Koa from 'koa';
import { RequestError } from '../errors.js';
import { safeEqual } from '../crypto/secrets.js';

/**
 * Who may call an operation: anyone, a developer (access token or API key), the operator, or a
 * commerce-platform broker (an app's entitlement webhook URL token plus `X-MerchantOps-Secret`).
 */
export type AuthMode = 'none' | 'developer' | 'admin' | 'entitlement_webhook';

/**
 * What an API key may do (the README's API keys section): `read` every GET; `licenses` license,
 * activation, redemption-code and marketplace writes; `builds` build uploads, releases and update
 * pushes; `admin` everything an API key may do (those and app, payment and webhook settings).
 */
export const API_KEY_SCOPES = ['read', 'licenses', 'builds', 'admin'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/**
 * What a developer operation needs: an API key scope (an access token has them all), or `session`:
 * a signed-in person's access token only, never an API key (changing 2FA, the password, API keys).
 */
export type RouteScope = ApiKeyScope | 'session';

export type Actor = { developerId: string; via: 'access_token'; sessionId: string } | { developerId: string; via: 'api_key'; keyId: string; scopes: readonly ApiKeyScope[] };

/** The app whose entitlement webhook URL token and secret a request presented. */
export interface WebhookActor {
  developerId: string;
  appId: string;
  via: 'entitlement_webhook';
}

/** Why a webhook request has no actor: no webhook has its URL token (404), or the secret is missing or wrong (401). */
export type WebhookRefusal = 'unknown_url' | 'bad_secret';

export interface CredentialVerifiers {
  /** The developer and sign-in session of a valid, unexpired access token of a live session, else null. */
  accessToken(token: string): Promise<{ developerId: string; sessionId: string } | null>;
  /** The developer, id and scopes of the active API key, else null. */
  apiKey(key: string): Promise<{ developerId: string; keyId: string; scopes: readonly ApiKeyScope[] } | null>;
  isApiKey(credential: string): boolean;
  /** The app of an entitlement webhook URL token and secret (absent: no webhook is known). */
  entitlementWebhook?(token: string, secret: string | undefined): Promise<WebhookActor | WebhookRefusal>;
}

export interface Authenticator {
  /** The actor behind the request's credentials, or null when there are none or they are invalid. */
  resolve(ctx: Koa.Context, mode: AuthMode): Promise<Actor | WebhookActor | null>;
  /** Throws the 401/404 that fits the missing or invalid credential. */
  reject(ctx: Koa.Context, mode: AuthMode): Promise<never>;
}

const BEARER = /^Bearer\s+(\S+)$/i;

export function createAuthenticator(verify: CredentialVerifiers, adminToken: string | undefined): Authenticator {
  return {
    async resolve(ctx, mode) {
      if (mode === 'none') return null;
      if (mode === 'entitlement_webhook') {
        const secret = ctx.get('x-merchantops-secret') || undefined;
        const outcome = verify.entitlementWebhook ? await verify.entitlementWebhook(String(ctx.params?.webhook_token ?? ''), secret) : 'unknown_url';
        if (typeof outcome !== 'string') return outcome;
        ctx.state.webhookRefusal = outcome;
        return null;
      }
      const bearer = BEARER.exec(ctx.get('authorization'))?.[1];
      if (mode === 'admin') {
        ctx.state.adminOk = Boolean(adminToken && bearer && safeEqual(bearer, adminToken));
        return null;
      }
      const headerKey = ctx.get('x-api-key');
      if (bearer && !verify.isApiKey(bearer)) {
        const session = await verify.accessToken(bearer);
        return session ? { ...session, via: 'access_token' } : null;
      }
      const key = bearer ?? headerKey;
      if (!key) return null;
      const apiKey = await verify.apiKey(key);
      return apiKey ? { ...apiKey, via: 'api_key' } : null;
    },

    async reject(ctx, mode) {
      if (mode === 'entitlement_webhook') {
        // docs/contract.md: a wrong URL is a permanent 404, a wrong secret a permanent 401.
        if (ctx.state.webhookRefusal === 'unknown_url') throw new RequestError('NOT_FOUND', 'No entitlement webhook has this URL');
        throw new RequestError('UNAUTHORIZED', 'Send the webhook secret in the X-MerchantOps-Secret header; this one is missing, wrong or expired');
      }
      if (mode === 'admin') {
        // Disabled operator endpoints do not exist as far as callers can tell.
        if (!adminToken) throw new RequestError('NOT_FOUND', 'Not found');
        if (ctx.state.adminOk) return undefined as never;
        throw new RequestError('UNAUTHORIZED', 'A valid operator token is required');
      }
      const given = Boolean(ctx.get('authorization') || ctx.get('x-api-key'));
      throw new RequestError(
        'UNAUTHORIZED',
        given ? 'The access token or API key is invalid or expired' : 'Authentication required: send Authorization: Bearer <token> or X-API-Key',
        { headers: { 'WWW-Authenticate': 'Bearer' } },
      );
    },
  };
}

const sessionRequired = () =>
  new RequestError(
    'SESSION_REQUIRED',
    'API keys cannot change two-factor authentication, the password or API keys: sign in and send the access token (Authorization: Bearer), with your password or a two-factor code',
  );

/**
 * Refuses an API key that lacks what the operation needs (403): a `session` operation takes no API
 * key at all, any other one a key with its scope or `admin`. Access tokens may do everything.
 */
export function assertScope(actor: Actor, scope: RouteScope): void {
  if (actor.via !== 'api_key') return;
  if (scope === 'session') throw sessionRequired();
  if (!actor.scopes.includes(scope) && !actor.scopes.includes('admin')) {
    throw new RequestError('INSUFFICIENT_SCOPE', `This API key lacks the \`${scope}\` scope this operation needs (it has: ${actor.scopes.join(', ')})`);
  }
}

/** The sign-in session of a `session` operation's caller (`assertScope` lets no API key reach one). */
export function sessionOf(actor: Actor): string {
  if (actor.via !== 'access_token') throw sessionRequired();
  return actor.sessionId;
}
