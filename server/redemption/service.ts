import type { Clock } from '../clock.js';
import { newId } from '../crypto/secrets.js';
import { deliverableBuildsFromJson } from '../delivery/deliverable-builds.js';
import { deliveryEmailRequest, type Downloads, type SoldLicenses } from '../delivery/sold-license.js';
import { deliveryEmail as deliveryEmailOf } from '../email/outbox.js';
import type { NewOutboxEmail } from '../email/store.js';
import { assertThat, RequestError, type ErrorCode } from '../errors.js';
import { newLicenseKey } from '../licenses/license-key.js';
import { seatColumns } from '../licenses/rules.js';
import type { Entitlement } from '../entitlements/entitlement.js';
import type { TenantQuotaService } from '../quotas/index.js';
import { newRedemptionCode, normaliseRedemptionCode, redemptionCodeHash, REDEMPTION_CODE_SHAPE } from './codes.js';
import type { CreateBatchInput } from './schemas.js';
import type { BatchRow, RedemptionStore } from './store.js';

/** docs/contract.md's redemption failure messages, one per outcome. */
export const REDEMPTION_FAILURES = {
  not_found: { code: 'REDEMPTION_CODE_NOT_FOUND', detail: `Code not found: check it for typos; codes look like ${REDEMPTION_CODE_SHAPE}` },
  redeemed: { code: 'REDEMPTION_CODE_ALREADY_REDEEMED', detail: 'This code has already been redeemed' },
  expired: { code: 'REDEMPTION_CODE_EXPIRED', detail: 'This code has expired' },
  revoked: { code: 'REDEMPTION_CODE_REVOKED', detail: 'This code has been revoked' },
  // Ours, beyond docs/contract.md's list: paid sales need the seller's active Pro subscription. The code stays Available.
  seller_inactive: {
    code: 'REDEMPTION_UNAVAILABLE',
    detail: "This code cannot be redeemed right now: the seller's account is not active. It stays valid; try again later or contact the seller",
  },
} as const satisfies Record<string, { code: ErrorCode; detail: string }>;

const fail = (outcome: keyof typeof REDEMPTION_FAILURES) => new RequestError(REDEMPTION_FAILURES[outcome].code, REDEMPTION_FAILURES[outcome].detail);

const NO_BUILD_NOTE = 'No build of this app is ready for download yet; the license key already works. Ask the seller for the download.';

/** Redemption batches (portal operations) and the public redemption of their codes. */
export function createRedemption(deps: {
  store: RedemptionStore;
  sold: SoldLicenses;
  clock: Clock;
  wakeJobs: () => void;
  /** Codes per batch and per day. */
  quotas: Pick<TenantQuotaService, 'takeRedemptionCodes'>;
}) {
  const { store, sold, clock } = deps;

  function canonicalOrNotFound(input: string): { code: string; hash: string } {
    const code = normaliseRedemptionCode(input);
    if (!code) throw fail('not_found');
    return { code, hash: redemptionCodeHash(code) };
  }

  return {
    /** Creates the batch and its codes in one transaction; the plain codes are answered here only. */
    async createBatch(developerId: string, appId: string, input: CreateBatchInput): Promise<BatchRow & { codes: string[] }> {
      const now = clock.now();
      const app = await store.app(developerId, appId, now);
      assertThat(app, 'APP_NOT_FOUND', 'No such app');
      // docs/contract.md: the free tier issues trial licenses only; creating codes is free, so only the type is checked.
      assertThat(app.plan === 'pro' || input.license_type === 'trial', 'PLAN_REQUIRED', 'The free plan can create trial batches only; paid codes need an active Pro subscription');
      const codesExpireAt = input.codes_expire_at === undefined ? null : new Date(input.codes_expire_at);
      if (codesExpireAt && codesExpireAt.getTime() <= now.getTime()) {
        throw new RequestError('VALIDATION_FAILED', 'body.codes_expire_at: must be in the future');
      }
      const batch: BatchRow = {
        id: newId('rbt'),
        developer_id: developerId,
        app_id: app.id,
        channel: input.channel,
        label: input.label,
        quantity: input.quantity,
        ...seatColumns(input, app.default_device_limit),
        license_expiry_days: input.license_expiry_days,
        license_type: input.license_type,
        features: input.features,
        meters: input.meters ?? null,
        codes_expire_at: codesExpireAt,
        created_at: now,
      };
      const codes = await store.transaction(async (trx) => {
        await deps.quotas.takeRedemptionCodes(trx, developerId, batch.quantity);
        await store.insertBatch(trx, batch);
        const kept: string[] = [];
        // A hash already taken (two random codes colliding: about never) is replaced by a new code.
        while (kept.length < batch.quantity) {
          const fresh = new Map(Array.from({ length: batch.quantity - kept.length }, () => newRedemptionCode()).map((c) => [redemptionCodeHash(c), c]));
          const inserted = await store.insertCodes(trx, batch, [...fresh.keys()]);
          for (const hash of inserted) kept.push(fresh.get(hash)!);
        }
        return kept;
      });
      return { ...batch, codes };
    },

    async listBatches(developerId: string, appId: string, page: { limit: number; offset: number }) {
      const now = clock.now();
      assertThat(await store.app(developerId, appId, now), 'APP_NOT_FOUND', 'No such app');
      return store.listBatches(developerId, appId, page, now);
    },

    /** Revokes one of the developer's Available codes; a code of another developer is not found. */
    async revokeCode(developerId: string, input: string) {
      const now = clock.now();
      const { code, hash } = canonicalOrNotFound(input);
      const revoked = await store.revokeCode(developerId, hash, now);
      if (revoked) return { code, batch_id: revoked.batch_id, status: 'revoked' as const, revoked_at: revoked.revoked_at };
      const state = await store.codeState(hash, now, { developerId });
      if (!state) throw fail('not_found');
      // Revoking again changes nothing and says so.
      if (state.status === 'revoked') return { code, batch_id: state.batch_id, status: 'revoked' as const, revoked_at: state.revoked_at! };
      throw new RequestError(
        'REDEMPTION_CODE_NOT_REVOCABLE',
        state.status === 'redeemed' ? 'This code was already redeemed: revoke its license instead' : 'This code has expired; it can no longer be redeemed',
      );
    },

    /** Revokes the batch's Available codes (not redeemed, revoked or expired ones). */
    async revokeAll(developerId: string, batchId: string): Promise<number> {
      assertThat(await store.batchExists(developerId, batchId), 'REDEMPTION_BATCH_NOT_FOUND', 'No such redemption batch');
      return store.revokeAvailable(developerId, batchId, clock.now());
    },

    /**
     * Redeems a code: mints the batch's license (its fee once, unless a trial), records the
     * redeemer's address and the time on the code, and with an address and a READY build queues the
     * delivery email, all in one statement (RedemptionStore.redeem). With an address the email,
     * which carries a signed link per platform, is rendered first from the code's app and builds,
     * read before by one statement; without one, the redeeming statement reads them. One round trip
     * without an address, two with one. A failure says why with docs/contract.md's messages.
     */
    async redeem(input: string, email: string | null): Promise<Entitlement> {
      const now = clock.now();
      const { hash } = canonicalOrNotFound(input);
      const licenseId = newId('lic');
      const licenseKey = newLicenseKey();
      // With an address, the email carries the links: the code's app and builds are read first.
      let offered: Downloads | null = null;
      let deliveryEmail: NewOutboxEmail | null = null;
      if (email) {
        const code = await store.redeemable(hash, now);
        if (!code) throw fail('not_found');
        if (code.status !== 'available') throw fail(code.status);
        if (!code.sellable) throw fail('seller_inactive');
        offered = sold.downloadsOf(code.platforms, deliverableBuildsFromJson(code.builds));
        if (offered.download) {
          const app = { id: code.app_id, developer_id: code.developer_id, name: code.app_name };
          const links = { download: offered.download, downloads: offered.downloads };
          deliveryEmail = deliveryEmailOf(deliveryEmailRequest({ app, license: { id: licenseId, license_key: licenseKey }, email }, links));
        }
      }
      const outcome = await store.redeem({ codeHash: hash, now, email, licenseId, licenseKey, deliveryEmail, readBuilds: offered === null });
      if (!outcome) throw fail('not_found');
      if (!outcome.claimed) {
        if (outcome.status === 'available' && !outcome.sellable) throw fail('seller_inactive');
        // 'available' as the statement began: a concurrent transaction changed the code meanwhile; its status now says how.
        const status = outcome.status === 'available' ? (await store.codeState(hash, now))?.status : outcome.status;
        throw fail(status && status !== 'available' ? status : 'redeemed');
      }
      // The fee's report job waits for the runner's next look (billing/store.ts FEE_REPORT_JOB); an email goes at once.
      if (outcome.email_queued) deps.wakeJobs();
      offered ??= sold.downloadsOf(outcome.platforms!, deliverableBuildsFromJson(outcome.builds!));
      const link = offered.download;
      return {
        license_key: licenseKey,
        download_url: link?.download_url ?? null,
        download_expires_at: link?.download_expires_at ?? null,
        downloads: offered.downloads,
        app_name: outcome.app_name!,
        app_version: link?.app_version ?? null,
        customer_email: email,
        note: link ? null : NO_BUILD_NOTE,
        build_id: link?.build_id ?? null,
        seller_name: outcome.seller_name!,
      };
    },
  };
}

export type Redemption = ReturnType<typeof createRedemption>;
