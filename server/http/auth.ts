import type Koa from 'koa';
import { RequestError } from '../errors.js';
import { safeEqual } from '../crypto/secrets.js';

/**
 * Who may call an operation: anyone, a developer (access token or API key), the operator, or a
 * commerce-platform broker (an app's entitlement webhook URL token plus `X-MerchantOps-Secret`).
 */
export type AuthMode = 'none' | 'developer' | 'admin' | 'entitlement_webhook';

export interface Actor {
  developerId: string;
  via: 'access_token' | 'api_key';
}

/** The app whose entitlement webhook URL token and secret a request presented. */
export interface WebhookActor {
  developerId: string;
  appId: string;
  via: 'entitlement_webhook';
}

/** Why a webhook request has no actor: no webhook has its URL token (404), or the secret is missing or wrong (401). */
export type WebhookRefusal = 'unknown_url' | 'bad_secret';

export interface CredentialVerifiers {
  /** Developer id of a valid, unexpired access token, else null. */
  accessToken(token: string): string | null;
  /** Developer id of the active API key, else null. */
  apiKey(key: string): Promise<string | null>;
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
        const developerId = verify.accessToken(bearer);
        return developerId ? { developerId, via: 'access_token' } : null;
      }
      const key = bearer ?? headerKey;
      if (!key) return null;
      const developerId = await verify.apiKey(key);
      return developerId ? { developerId, via: 'api_key' } : null;
    },

    async reject(ctx, mode) {
      if (mode === 'entitlement_webhook') {
        // SPEC.md: a wrong URL is a permanent 404, a wrong secret a permanent 401.
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
