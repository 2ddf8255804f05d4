import type Koa from 'koa';
import type { Knex } from 'knex';
import { bytesOf, planFileAnswer, sendStoredFile, type FileAnswer } from '../builds/send-file.js';
import type { Clock } from '../clock.js';
import type { DeliverableBuild } from '../delivery/deliverable-builds.js';
import type { BlobStorage } from '../storage/blob-storage.js';
import { downloadMeter } from './download-meter.js';
import { downloadLimit, unionIds, type StoreOffer } from './offer.js';
import type { EntitlementsStore, EventApp, StoreLicense, StoreLicenseRow } from './store.js';

/** A store license locked for the download's transaction, with its app and its ACTIVE license. */
export interface MeteredScope {
  row: StoreLicenseRow;
  app: EventApp;
  license: StoreLicense;
}

/** What a surface that downloads against the allowance decides; each answers its refusals its own way (HTML, JSON). */
export interface MeteredSurface {
  /** Locks the store license (`store.lockStoreLicense`) and answers its scope; null when the request was answered (refused) already. */
  open(trx: Knex.Transaction): Promise<MeteredScope | null>;
  /** The READY build to send, given the builds the store was offered so far; null when the request was answered already. */
  file(trx: Knex.Transaction, scope: MeteredScope, offered: ReadonlySet<string>): Promise<DeliverableBuild | null>;
  /** Answers a download the allowance has no room for. */
  limitReached(limit: number): void;
}

/**
 * docs/contract.md, Limits: a store license's download allowance is shared by the hosted page and the
 * installer. Both download through here, so one rule counts them: the allowance (or the developer's
 * limit, which replaces it) is counted in bytes served (`download-meter.ts`) under the store license's
 * row lock, charged before the bytes leave (so concurrent downloads cannot pass it together: at the
 * last unit, exactly one gets it) and given back for what never left.
 */
export function createMeteredDownloads(deps: { store: EntitlementsStore; offer: StoreOffer; storage: BlobStorage; clock: Clock }) {
  const { store, offer, clock } = deps;

  return {
    async download(ctx: Koa.Context, surface: MeteredSurface): Promise<void> {
      const planned = await store.db.transaction(async (trx) => {
        const scope = await surface.open(trx);
        if (!scope) return null;
        const current = await offer.current(trx, scope.app);
        const offered = unionIds(
          scope.row.offered_build_ids,
          current.map((o) => o.build.id),
        );
        const file = await surface.file(trx, scope, offered);
        if (!file) return null;
        const answer: FileAnswer = planFileAnswer(ctx, { size: file.protected_size_bytes, sha256: file.sha256 });
        const limit = downloadLimit(scope.license, scope.app, offered);
        const counted = await downloadMeter.charge(trx, {
          storeLicenseId: scope.row.id,
          buildId: file.id,
          sizeBytes: Number(file.protected_size_bytes),
          bytes: bytesOf(ctx, answer),
          limit,
          now: clock.now(),
        });
        if (!counted) {
          surface.limitReached(limit);
          return null;
        }
        await store.updateShop(trx, scope.row.id, { offered_build_ids: [...offered], updated_at: clock.now() });
        return { file, answer, storeLicenseId: scope.row.id };
      });
      if (!planned) return;
      const { file, answer, storeLicenseId } = planned;
      const sent = await sendStoredFile(ctx, deps.storage, { key: file.package_key, size: file.protected_size_bytes, sha256: file.sha256, name: file.package_name }, answer);
      // Counted up front (so concurrent requests cannot pass the allowance); what never left is given back.
      const unsent = bytesOf(ctx, answer) - sent;
      if (unsent > 0) await downloadMeter.refund(store.db, { storeLicenseId, buildId: file.id, sizeBytes: Number(file.protected_size_bytes), bytes: unsent });
    },
  };
}

export type MeteredDownloads = ReturnType<typeof createMeteredDownloads>;
