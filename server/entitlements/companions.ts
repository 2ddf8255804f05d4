import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { newId } from '../crypto/secrets.js';
import { assertThat, RequestError } from '../errors.js';
import type { WebhookActor } from '../http/auth.js';
import { rateLimited } from '../http/rate-window.js';
import { newLicenseKey } from '../licenses/license-key.js';
import { unknownWebhookUrl, type WebhookCredentials } from './credentials.js';
import type { StoreOffer } from './offer.js';
import { COMMERCE_PLATFORM_SOURCE } from './rules.js';
import type { EntitlementsStore, EventApp, StoreLicense, StoreLicenseRow } from './store.js';

/** docs/contract.md: 3 device resets in any 30 days per store license, apart from portal resets. */
export const RESETS_PER_WINDOW = 3;
export const RESET_WINDOW_MS = 30 * 86_400_000;

/** What a redact removes and keeps: answered as is. */
const REDACT_REMOVED = ['shop_domain', 'emails', 'subscription_name', 'attribution', 'delivery_links', 'event_history'];
const REDACT_KEPT = ['license_row_anonymised', 'device_fingerprint_hashes', 'trial_history', 'fee_ledger'];

const appMismatch = () => new RequestError('APP_MISMATCH', "The `app` value is not this app's product key");
const noLicense = () => new RequestError('LICENSE_NOT_FOUND', 'This shop has no license of this app');

/** The companion endpoints of the webhook: a read, the delivery email, a no-commitment trial, redact, device resets. */
export function createCompanions(deps: { store: EntitlementsStore; offer: StoreOffer; clock: Clock; credentials: WebhookCredentials; wakeJobs: () => void }) {
  const { store, offer, clock } = deps;

  /** The app, with the credentials the authenticator accepted confirmed against its webhook row (404/401 otherwise). */
  const appOf = async (q: Knex, actor: WebhookActor): Promise<EventApp> => {
    const app = await store.webhookApp(q, actor.appId);
    deps.credentials.confirm(actor, app, clock.now());
    if (!app) throw unknownWebhookUrl();
    return app;
  };
  const assertApp = (app: EventApp, value: string | undefined) => {
    if (value !== undefined && value !== app.product_key) throw appMismatch();
  };

  /** The state the read and the trial answer. */
  function view(shop: string, row: StoreLicenseRow | undefined, license: StoreLicense | undefined) {
    const active = license?.effective_status === 'ACTIVE';
    const trialKind = license && row?.trial_kind ? row.trial_kind : null;
    return {
      ok: true,
      shop,
      entitled: active,
      status: license?.effective_status ?? null,
      trial: active && trialKind !== null,
      trial_kind: trialKind,
      license_key: license?.license_key ?? null,
      delivery_url: license && row ? offer.urlOf(row) : null,
      expires_at: license?.expires_at?.toISOString() ?? null,
    };
  }

  /** The shop's row and license, locked, for a change; 404 without a license. */
  async function licensed(trx: Knex.Transaction, app: EventApp, shop: string) {
    const row = await store.findShop(trx, app.id, shop);
    const license = row?.license_id ? await store.lockLicense(trx, row.license_id, clock.now()) : undefined;
    if (!row || !license) throw noLicense();
    return { row, license };
  }

  return {
    async read(actor: WebhookActor, query: { shop: string; app?: string }) {
      return store.transaction(async (trx) => {
        const app = await appOf(trx, actor);
        assertApp(app, query.app);
        const row = await trx('store_licenses').where({ app_id: app.id, shop: query.shop }).first<StoreLicenseRow | undefined>();
        const license = row?.license_id ? await store.readLicense(trx, row.license_id, clock.now()) : undefined;
        return view(query.shop, row, license);
      });
    },

    /** Stores (or clears) the address and mails the delivery once per address; an `app` mismatch is recorded, not refused. */
    async deliveryEmail(actor: WebhookActor, body: { shop: string; email: string | null; app?: string }) {
      const result = await store.transaction(async (trx) => {
        const now = clock.now();
        const app = await appOf(trx, actor);
        const mismatch = body.app !== undefined && body.app !== app.product_key;
        const { row, license } = await licensed(trx, app, body.shop);
        await store.updateShop(trx, row.id, { delivery_email: body.email, updated_at: now });
        await store.updateLicense(trx, license.id, { email: body.email, updated_at: now });
        let sent = false;
        if (body.email && license.effective_status === 'ACTIVE') {
          sent = await offer.email(trx, app, license, row.id, body.email);
          if (sent) await store.updateShop(trx, row.id, { offered_build_ids: await offer.offeredNow(trx, app, row), updated_at: now });
        }
        if (mismatch) {
          await store.recordEvent(trx, {
            app_id: app.id,
            event_id: newId('dem'),
            kind: 'delivery_email',
            store_license_id: row.id,
            shop: body.shop,
            app_value: body.app!,
            entitled: null,
            occurred_at: null,
            trial: false,
            test: false,
            topic: null,
            platform_status: null,
            action: 'accepted',
            note: 'app_mismatch',
            license_id: license.id,
            received_at: now,
          });
        }
        return { ok: true, shop: body.shop, email: body.email, email_sent: sent, app_mismatch: mismatch };
      });
      if (result.email_sent) deps.wakeJobs();
      return result;
    },

    /**
     * A 14-day no-commitment trial for a shop without a license; otherwise the shop's state, unchanged
     * (idempotent by state). The clock starts at the first activation on a machine (activations).
     */
    async trial(actor: WebhookActor, body: { shop: string; event_id: string; app?: string }) {
      return store.transaction(async (trx) => {
        const now = clock.now();
        const app = await appOf(trx, actor);
        assertApp(app, body.app);
        const row = await store.lockShop(trx, { id: newId('stl'), appId: app.id, developerId: app.developer_id, shop: body.shop, now });
        const existing = row.license_id ? await store.readLicense(trx, row.license_id, now) : undefined;
        if (existing) return { ...view(body.shop, row, existing), action: 'noop' as const, event_id: body.event_id };
        const license = {
          id: newId('lic'),
          license_key: newLicenseKey(),
          license_type: 'trial' as const,
          device_limit: app.default_device_limit,
          email: row.delivery_email,
          source: COMMERCE_PLATFORM_SOURCE,
        };
        await store.insertLicense(trx, { ...license, developer_id: app.developer_id, app_id: app.id });
        Object.assign(row, { license_id: license.id, trial_kind: 'no_commitment', delivery_token_hash: offer.tokenHashOf(row.id) });
        await store.updateShop(trx, row.id, {
          license_id: license.id,
          trial_kind: 'no_commitment',
          delivery_token_hash: row.delivery_token_hash,
          offered_build_ids: await offer.offeredNow(trx, app, row),
          updated_at: now,
        });
        const minted: StoreLicense = { ...license, effective_status: 'ACTIVE', expires_at: null, download_limit: null };
        return { ...view(body.shop, row, minted), action: 'granted' as const, event_id: body.event_id };
      });
    },

    /**
     * Removes the shop's personal data; the license row stays, anonymised and expired (an active
     * no-commitment trial keeps running). A paying or live-trial store needs `force`.
     */
    async redact(actor: WebhookActor, body: { shop: string; app: string; force?: boolean }) {
      return store.transaction(async (trx) => {
        const now = clock.now();
        const app = await appOf(trx, actor);
        assertApp(app, body.app);
        const row = await store.findShop(trx, app.id, body.shop);
        if (!row) return { ok: true, shop: body.shop, redacted: false, license_status: null, removed: [], kept: [] };
        const license = row.license_id ? await store.lockLicense(trx, row.license_id, now) : undefined;
        const active = license?.effective_status === 'ACTIVE';
        const liveTrial = active && row.trial_kind === 'no_commitment';
        if (active && !liveTrial && !body.force) {
          const reason = row.trial_kind === 'subscription' ? 'live_subscription_trial' : 'store_paying';
          throw new RequestError('STORE_STILL_ENTITLED', 'The store is still paying or in a live subscription trial; send force: true to redact anyway', { reason });
        }
        await store.deleteHistory(trx, row);
        await store.updateShop(trx, row.id, {
          shop: null,
          delivery_email: null,
          subscription_name: null,
          attribution: {},
          delivery_token_hash: null,
          offered_build_ids: [],
          redacted_at: now,
          updated_at: now,
        });
        let status = license?.effective_status ?? null;
        if (license) {
          await store.updateLicense(trx, license.id, { email: null, ...(liveTrial ? {} : { status: 'EXPIRED' }), updated_at: now });
          if (!liveTrial) status = 'EXPIRED';
        }
        return { ok: true, shop: body.shop, redacted: true, license_status: status, removed: REDACT_REMOVED, kept: REDACT_KEPT };
      });
    },

    /** Deactivates every computer of the shop's license: 3 per 30 days, the fourth 429 with Retry-After. Trial history stays. */
    async resetDevices(actor: WebhookActor, body: { shop: string; app: string }) {
      return store.transaction(async (trx) => {
        const now = clock.now();
        const app = await appOf(trx, actor);
        assertApp(app, body.app);
        const { row, license } = await licensed(trx, app, body.shop);
        const recent = await store.resetsSince(trx, row.id, new Date(now.getTime() - RESET_WINDOW_MS));
        const freedAt = (at: Date) => new Date(new Date(at).getTime() + RESET_WINDOW_MS);
        if (recent.length >= RESETS_PER_WINDOW) {
          const wait = Math.max(1, Math.ceil((freedAt(recent[0]!).getTime() - now.getTime()) / 1000));
          throw rateLimited(wait, `This license's devices were reset ${RESETS_PER_WINDOW} times in the last 30 days; retry in ${wait} seconds`);
        }
        const removed = await store.removeDevices(trx, license.id, 'store_reset', now);
        await store.recordReset(trx, row.id, now);
        const used = [...recent, now];
        const remaining = RESETS_PER_WINDOW - used.length;
        assertThat(remaining >= 0, 'INTERNAL_ERROR', 'reset count');
        return {
          ok: true,
          shop: body.shop,
          devices_removed: removed,
          resets_remaining: remaining,
          next_reset_available_at: (remaining > 0 ? now : freedAt(used[0]!)).toISOString(),
        };
      });
    },
  };
}

export type Companions = ReturnType<typeof createCompanions>;
