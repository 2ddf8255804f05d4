import type { Knex } from 'knex';
import type { DownloadLinks } from '../builds/download-link.js';
import { deliverableOffers } from '../delivery/deliverable-builds.js';
import { deliveryEmailRequest, linkOffers, type PlatformDownload } from '../delivery/sold-license.js';
import type { EmailOutbox } from '../email/outbox.js';
import { assertThat, RequestError } from '../errors.js';
import { sessionHash } from '../payments/fulfilment.js';
import type { EntitledLicense, EntitlementStore } from './entitlement-store.js';

/** What a buyer gets: docs/contract.md's six fields, plus `note` saying why the download fields are null. */
export interface Entitlement {
  license_key: string;
  download_url: string | null;
  download_expires_at: string | null;
  /** One link per platform the app ships; `download_url` is the newest of them. */
  downloads: PlatformDownload[];
  app_name: string;
  app_version: string | null;
  customer_email: string | null;
  note: string | null;
  /** The build the link points to: a refresh re-signs the link but names the same build. */
  build_id: string | null;
  /** Who sells the app (its developer's company name), for the hosted pages; not part of the JSON answers. */
  seller_name: string;
}

/**
 * How long after a sale the storefront redirect's page shows the license to whoever names the
 * buyer's address: the buyer arrives there straight from the storefront's checkout. An address is
 * no secret, so past this the page only sends the delivery email to that address.
 */
export const STOREFRONT_REVEAL_MS = 60 * 60 * 1000;

/** A storefront buyer's license as the page may show it: in full within STOREFRONT_REVEAL_MS of the sale, else only mailed. */
export interface AddressEntitlement {
  entitlement: Entitlement;
  shown: boolean;
}

export const NOT_PROVISIONED_DETAIL = 'license not yet provisioned; retry in about 2 seconds';
const NO_BUILD_NOTE = 'No build of this app is ready for download yet; the license key already works. Ask again later for the download link.';

/**
 * The customer-facing delivery: the entitlement of a checkout session (public endpoint, hosted
 * page) and of a storefront buyer who names only an email address (hosted page).
 */
export function createEntitlements(deps: {
  store: EntitlementStore;
  links: DownloadLinks;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
  /** Starts the queued delivery email at once, after the commit. */
  wakeJobs: () => void;
}) {
  const { store, links } = deps;

  /**
   * The download links and, when the license has an address, the delivery email (queued once per
   * license and address). The links are those of the current 7-day window since the sale, so every
   * answer and refresh of the page within it shows the same URLs.
   */
  async function deliver(trx: Knex.Transaction, license: EntitledLicense): Promise<{ entitlement: Entitlement; queued: boolean }> {
    const app = { id: license.app_id, delivery_mode: license.delivery_mode, platforms: license.platforms };
    const { download, downloads } = linkOffers(links, await deliverableOffers(trx, app), license.created_at);
    const entitlement: Entitlement = {
      license_key: license.license_key,
      download_url: download?.download_url ?? null,
      download_expires_at: download?.download_expires_at ?? null,
      downloads,
      app_name: license.app_name,
      app_version: download?.app_version ?? null,
      customer_email: license.email,
      note: download ? null : NO_BUILD_NOTE,
      build_id: download?.build_id ?? null,
      seller_name: license.seller_name,
    };
    // Without a build there is no link to mail yet: the first return that has one sends it.
    const queued =
      license.email && download
        ? await deps.outbox.queueDeliveryEmail(
            trx,
            deliveryEmailRequest(
              { app: { id: license.app_id, developer_id: license.developer_id, name: license.app_name }, license, email: license.email },
              { download, downloads },
            ),
          )
        : false;
    return { entitlement, queued };
  }

  async function withDelivery<T>(work: (trx: Knex.Transaction) => Promise<{ result: T; queued: boolean }>): Promise<T> {
    const { result, queued } = await store.transaction(work);
    if (queued) deps.wakeJobs();
    return result;
  }

  return {
    /** The app's name and seller for a hosted page that has no license to show (yet); undefined for an unknown app. */
    productOf: (appId: string) => store.appProduct(appId),

    /**
     * The license fulfilment minted for a session, for the app that sold it. Before the payment
     * notification is processed there is none: 404 LICENSE_NOT_PROVISIONED, retry shortly.
     */
    forSession: (appId: string, sessionId: string): Promise<Entitlement> =>
      withDelivery(async (trx) => {
        const license = await store.licenseOfSession(trx, appId, sessionHash(sessionId));
        if (!license) {
          assertThat(await store.appExists(trx, appId), 'APP_NOT_FOUND', 'No such app');
          throw new RequestError('LICENSE_NOT_PROVISIONED', NOT_PROVISIONED_DETAIL, { headers: { 'Retry-After': '2' } });
        }
        assertThat(license.status !== 'REVOKED', 'LICENSE_NOT_FOUND', 'The license of this purchase was revoked');
        const { entitlement, queued } = await deliver(trx, license);
        return { result: entitlement, queued };
      }),

    /**
     * A storefront buyer named by an address (docs/contract.md "Storefront redirect"): the newest
     * live license that address bought, shown like a checkout's, with the delivery email (once per
     * license and address); null while it has none (the storefront's order may not be provisioned yet).
     */
    forAddress: (appId: string, email: string): Promise<AddressEntitlement | null> =>
      withDelivery(async (trx) => {
        assertThat(await store.appExists(trx, appId), 'APP_NOT_FOUND', 'No such app');
        const license = await store.latestLicenseForEmail(trx, appId, email, STOREFRONT_REVEAL_MS);
        if (!license) return { result: null, queued: false };
        const { entitlement, queued } = await deliver(trx, license);
        return { result: { entitlement, shown: license.recent }, queued };
      }),
  };
}

export type Entitlements = ReturnType<typeof createEntitlements>;
