import type { Clock } from '../clock.js';
import { assertThat, RequestError } from '../errors.js';
import type { WebhookActor, WebhookRefusal } from '../http/auth.js';
import type { WebhookCredentials } from './credentials.js';
import type { EntitlementsStore } from './store.js';
import { newWebhookSecret, newWebhookToken, SECRET_OVERLAP_MS, secretMatches, webhookSecretHash, webhookTokenHash, webhookUrl } from './tokens.js';

/** The developer's side of the webhook: enable (Pro), rotate the secret, disable; and the check of every webhook request. */
export function createWebhookSettings(deps: { store: EntitlementsStore; clock: Clock; publicBaseUrl: string; credentials: WebhookCredentials }) {
  const { store, clock, credentials } = deps;

  async function ownApp(developerId: string, appId: string) {
    const app = await store.appWithPlan(developerId, appId, clock.now());
    assertThat(app, 'APP_NOT_FOUND', 'No such app');
    return app;
  }

  return {
    /** The URL and the secret, answered this once: only their hashes are kept. */
    async enable(developerId: string, appId: string) {
      const app = await ownApp(developerId, appId);
      assertThat(app.plan === 'pro', 'PLAN_REQUIRED', 'The entitlement webhook needs a Pro subscription');
      const token = newWebhookToken();
      const secret = newWebhookSecret();
      const inserted = await store.insertWebhook({
        app_id: app.id,
        developer_id: developerId,
        token_hash: webhookTokenHash(token),
        secret_hash: webhookSecretHash(secret),
        previous_secret_hash: null,
        previous_secret_expires_at: null,
        enabled_at: clock.now(),
        secret_rotated_at: null,
      });
      if (!inserted) {
        throw new RequestError('ENTITLEMENT_WEBHOOK_ENABLED', 'The entitlement webhook is already enabled: rotate its secret, or disable it first for a new URL');
      }
      return { webhook_url: webhookUrl(deps.publicBaseUrl, token), secret, product_key: app.product_key };
    },

    /** A new secret; the one it replaces keeps working for 24 hours (one replaced before that stops at once). */
    async rotateSecret(developerId: string, appId: string) {
      await ownApp(developerId, appId);
      const secret = newWebhookSecret();
      const now = clock.now();
      const previousExpiresAt = new Date(now.getTime() + SECRET_OVERLAP_MS);
      const rotated = await store.rotateSecret(appId, webhookSecretHash(secret), previousExpiresAt, now);
      credentials.forgetApp(appId);
      assertThat(rotated, 'ENTITLEMENT_WEBHOOK_NOT_FOUND', 'The entitlement webhook of this app is not enabled');
      return { secret, previous_secret_expires_at: previousExpiresAt.toISOString() };
    },

    async disable(developerId: string, appId: string): Promise<void> {
      await ownApp(developerId, appId);
      const deleted = await store.deleteWebhook(appId);
      credentials.forgetApp(appId);
      assertThat(deleted, 'ENTITLEMENT_WEBHOOK_NOT_FOUND', 'The entitlement webhook of this app is not enabled');
    },

    async status(developerId: string, appId: string) {
      const app = await ownApp(developerId, appId);
      const hook = await store.webhookOf(appId);
      const overlap = hook?.previous_secret_expires_at && hook.previous_secret_expires_at > clock.now() ? hook.previous_secret_expires_at : null;
      return {
        enabled: Boolean(hook),
        product_key: app.product_key,
        enabled_at: hook?.enabled_at.toISOString() ?? null,
        secret_rotated_at: hook?.secret_rotated_at?.toISOString() ?? null,
        previous_secret_expires_at: overlap?.toISOString() ?? null,
      };
    },

    /**
     * The authenticator's check: the URL token names the app (else 404), the secret must match (else 401).
     * A webhook this process verified lately is taken from memory; the request's transaction then
     * confirms it against the row (`credentials.confirm`), so no change is missed.
     */
    async verify(token: string, secret: string | undefined): Promise<WebhookActor | WebhookRefusal> {
      if (!token) return 'unknown_url';
      const tokenHash = webhookTokenHash(token);
      const known = credentials.recall(tokenHash);
      if (known && secret && secretMatches(known, secret, clock.now())) return credentials.actor(tokenHash, secret, known);
      // Unknown here, or a secret memory does not accept (one rotated in meanwhile): ask the database.
      const hook = await store.webhookByToken(tokenHash);
      if (!hook) return 'unknown_url';
      credentials.remember(tokenHash, hook);
      if (!secret || !secretMatches(hook, secret, clock.now())) return 'bad_secret';
      return credentials.actor(tokenHash, secret, hook);
    },
  };
}

export type WebhookSettings = ReturnType<typeof createWebhookSettings>;
