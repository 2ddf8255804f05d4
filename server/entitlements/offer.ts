import type { Knex } from 'knex';
import { deliverableOffers, newestDeliverableBuilds, offerPerPlatform, type DeliverableBuild, type PlatformOffer } from '../delivery/deliverable-builds.js';
import { deliveryDedupeKey, type EmailOutbox } from '../email/outbox.js';
import type { DeliveryTokens } from './tokens.js';
import type { EntitlementsStore, EventApp, StoreLicense, StoreLicenseRow } from './store.js';

/** docs/contract.md: 10 downloads per build offered to a merchant, pooled across builds. */
export const DOWNLOADS_PER_BUILD = 10;

/**
 * The downloads a store may make: a developer-set limit (the license's, else the app's) replaces
 * the allowance; otherwise 10 per build offered (current at notification, at a download, or now).
 */
export function downloadLimit(license: Pick<StoreLicense, 'download_limit'>, app: Pick<EventApp, 'download_limit'>, offered: ReadonlySet<string>): number {
  return license.download_limit ?? app.download_limit ?? DOWNLOADS_PER_BUILD * offered.size;
}

export const unionIds = (...lists: Iterable<string>[]) => {
  const all = new Set<string>();
  for (const list of lists) for (const id of list) all.add(id);
  return all;
};

/** The builds offered so far plus those current given the newest build of each platform. */
function offeredWith(app: Pick<EventApp, 'platforms'>, row: Pick<StoreLicenseRow, 'offered_build_ids'>, newest: DeliverableBuild[]): string[] {
  return [
    ...unionIds(
      row.offered_build_ids,
      offerPerPlatform(app.platforms, newest).map((o) => o.build.id),
    ),
  ];
}

/** The store's permanent delivery: its page's URL, the builds it offers, the delivery email. */
export function createStoreOffer(deps: { store: EntitlementsStore; tokens: DeliveryTokens; outbox: Pick<EmailOutbox, 'queueDeliveryEmail'> }) {
  const { store, tokens } = deps;

  return {
    /** The page's URL while the store license has one (a redact deletes it). */
    urlOf: (row: Pick<StoreLicenseRow, 'id' | 'delivery_token_hash'>) => (row.delivery_token_hash ? tokens.urlOf(row.id) : null),

    /** What a store license stores so that its page works: the token's hash. */
    tokenHashOf: (storeLicenseId: string) => tokens.hashOf(tokens.tokenOf(storeLicenseId)),

    /** The build each of the app's platforms gets now (server/delivery/deliverable-builds.ts). */
    current: (q: Knex, app: EventApp): Promise<PlatformOffer[]> => deliverableOffers(q, app),

    /** The builds offered so far plus those current now: a notification offers them. */
    async offeredNow(q: Knex, app: EventApp, row: Pick<StoreLicenseRow, 'offered_build_ids'>): Promise<string[]> {
      return offeredWith(app, row, await newestDeliverableBuilds(q, app));
    },

    /** The same, given the app's newest deliverable builds as the event's first statement read them. */
    offeredWith,

    /** The standard delivery email with the permanent page's URL; false when this address already had it. */
    async email(trx: Knex.Transaction, app: EventApp, license: Pick<StoreLicense, 'id' | 'license_key'>, storeLicenseId: string, recipient: string): Promise<boolean> {
      // Read first: re-inserting the key of an email that the send job is marking sent can deadlock
      // with it (a speculative insert against a non-HOT update of the same unique key).
      if (await store.emailQueued(trx, deliveryDedupeKey(license.id, recipient))) return false;
      return deps.outbox.queueDeliveryEmail(trx, {
        developerId: app.developer_id,
        appId: app.id,
        licenseId: license.id,
        recipient,
        appName: app.name,
        licenseKey: license.license_key,
        downloadUrl: tokens.urlOf(storeLicenseId),
      });
    },
  };
}

export type StoreOffer = ReturnType<typeof createStoreOffer>;
