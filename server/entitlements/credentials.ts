import { performance } from 'node:perf_hooks';
import { RequestError } from '../errors.js';
import type { WebhookActor } from '../http/auth.js';
import { webhookSecretHash, secretHashMatches, type StoredSecrets } from './tokens.js';

/** A remembered webhook is looked up again after this long, whatever else happens. */
const TTL_MS = 60_000;
const MAX_WEBHOOKS = 10_000;

/** What the authenticator accepted a request on: the webhook row as it read it, and what the request presented. */
export interface WebhookStored extends StoredSecrets {
  app_id: string;
  developer_id: string;
}

interface Accepted {
  tokenHash: string;
  secretHash: string;
  stored: StoredSecrets;
}

interface Remembered extends WebhookStored {
  until: number;
}

/** The webhook row as a request's transaction reads it (absent: disabled, or its app deleted). */
export type CurrentWebhook = StoredSecrets & { token_hash: string };

const sameSecrets = (a: StoredSecrets, b: StoredSecrets) =>
  a.secret_hash === b.secret_hash &&
  a.previous_secret_hash === b.previous_secret_hash &&
  (a.previous_secret_expires_at?.getTime() ?? null) === (b.previous_secret_expires_at?.getTime() ?? null);

export const unknownWebhookUrl = () => new RequestError('NOT_FOUND', 'No entitlement webhook has this URL');
export const badWebhookSecret = () => new RequestError('UNAUTHORIZED', 'Send the webhook secret in the X-MerchantOps-Secret header; this one is missing, wrong or expired');

/**
 * The webhooks this process verified, so a webhook request costs no lookup before its transaction.
 * Safe without cross-process notification: every webhook operation reads the webhook row again in
 * its transaction's first statement (joined to the app it needs anyway) and `confirm`s the actor
 * against it, so a disable, a rotation or a deleted app elsewhere takes effect at once here too: the
 * request answers the 404/401 the authenticator would have given, with nothing committed. A secret
 * the cache does not know (one just rotated in) is looked up, never refused from memory.
 */
export function createWebhookCredentials() {
  const byToken = new Map<string, Remembered>();
  const accepted = new WeakMap<WebhookActor, Accepted>();

  return {
    /** The remembered row of a URL token's hash, while fresh. */
    recall(tokenHash: string): WebhookStored | undefined {
      const known = byToken.get(tokenHash);
      if (!known) return undefined;
      if (known.until > performance.now()) return known;
      byToken.delete(tokenHash);
      return undefined;
    },

    remember(tokenHash: string, stored: WebhookStored): void {
      if (!byToken.has(tokenHash) && byToken.size >= MAX_WEBHOOKS) byToken.delete(byToken.keys().next().value!);
      byToken.set(tokenHash, { ...stored, until: performance.now() + TTL_MS });
    },

    /** This process's rotation or disable of an app's webhook: forget it here at once. */
    forgetApp(appId: string): void {
      for (const [hash, known] of byToken) if (known.app_id === appId) byToken.delete(hash);
    },

    /** The actor the authenticator answers, tied to what it was accepted on (see `confirm`). */
    actor(tokenHash: string, presentedSecret: string, stored: WebhookStored): WebhookActor {
      const actor: WebhookActor = { developerId: stored.developer_id, appId: stored.app_id, via: 'entitlement_webhook' };
      accepted.set(actor, { tokenHash, secretHash: webhookSecretHash(presentedSecret), stored });
      return actor;
    },

    /**
     * In the request's transaction, with the webhook row it read: throws the authenticator's 404
     * when the webhook is gone (or has another URL now), its 401 when the presented secret no longer
     * works; otherwise returns. A secret rotated meanwhile is judged on the row just read.
     */
    confirm(actor: WebhookActor, current: CurrentWebhook | undefined, now: Date): void {
      const given = accepted.get(actor);
      if (!given) return;
      if (!current || current.token_hash !== given.tokenHash) {
        byToken.delete(given.tokenHash);
        throw unknownWebhookUrl();
      }
      if (sameSecrets(current, given.stored)) return;
      byToken.delete(given.tokenHash);
      if (!secretHashMatches(current, given.secretHash, now)) throw badWebhookSecret();
    },
  };
}

export type WebhookCredentials = ReturnType<typeof createWebhookCredentials>;
