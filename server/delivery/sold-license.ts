import type { Knex } from 'knex';
import type { FeeCollection, FeeLedger, LicenseFeeOutcome } from '../billing/fees.js';
import type { DownloadLinks } from '../builds/download-link.js';
import type { DeliveryEmailRequest, EmailOutbox } from '../email/outbox.js';
import type { LicenseType } from '../licenses/rules.js';
import type { PaymentsStore } from '../payments/store.js';

/** The app a license was sold for, with what its delivery needs. */
export interface SoldApp {
  id: string;
  developer_id: string;
  name: string;
  delivery_mode: string;
}

export interface Sale {
  app: SoldApp;
  license: { id: string; license_key: string };
  /** The buyer's address: the delivery email goes there when a build is ready. */
  email: string | null;
  /** The channel that sold the license (its `source`). */
  source: string;
  licenseType: LicenseType;
  test?: boolean;
  collectedBy?: FeeCollection;
}

/** A signed link to the newest build the buyer may download (7 days), or null while none is READY. */
export interface Download {
  download_url: string;
  download_expires_at: string;
  build_id: string;
  app_version: string | null;
}

export interface SaleDelivery {
  fee: LicenseFeeOutcome;
  download: Download | null;
  /** Whether the delivery email was queued (call `queue.wake()` after the commit). */
  emailQueued: boolean;
}

/** The delivery email of a sold license with a link to its build. */
export function deliveryEmailRequest(sale: { app: Omit<SoldApp, 'delivery_mode'>; license: Sale['license']; email: string }, link: Download): DeliveryEmailRequest {
  const { app, license } = sale;
  return {
    developerId: app.developer_id,
    appId: app.id,
    licenseId: license.id,
    recipient: sale.email,
    appName: app.name,
    appVersion: link.app_version ?? undefined,
    licenseKey: license.license_key,
    downloadUrl: link.download_url,
    downloadExpiresAt: link.download_expires_at,
  };
}

/**
 * What every channel does once it has minted a sold license, in the transaction that minted it:
 * the platform fee (once per license; trial and test licenses exempt), the download link and, when
 * the buyer gave an address and a build is ready, the delivery email. Checkout fulfilment and
 * marketplace provisioning share it; code redemption does the same in one statement
 * (server/redemption/store.ts) with the same fee, job and email pieces, and `linkTo` here.
 */
export function createSoldLicenses(deps: {
  fees: Pick<FeeLedger, 'recordLicenseFee'>;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
  links: DownloadLinks;
  builds: Pick<PaymentsStore, 'latestDeliverableBuild'>;
}) {
  /** A signed link to `build` (the latest deliverable build), valid 7 days. */
  function linkTo(build: { id: string; version: string | null }): Download {
    const link = deps.links.create(build.id);
    return { download_url: link.download_url, download_expires_at: link.expires_at, build_id: build.id, app_version: build.version };
  }

  async function download(trx: Knex.Transaction, app: Pick<SoldApp, 'id' | 'delivery_mode'>): Promise<Download | null> {
    const build = await deps.builds.latestDeliverableBuild(trx, app);
    return build ? linkTo(build) : null;
  }

  return {
    download,
    linkTo,

    async chargeAndDeliver(trx: Knex.Transaction, sale: Sale): Promise<SaleDelivery> {
      const { app, license } = sale;
      const fee = await deps.fees.recordLicenseFee(trx, {
        licenseId: license.id,
        appId: app.id,
        developerId: app.developer_id,
        source: sale.source,
        licenseType: sale.licenseType,
        test: sale.test,
        collectedBy: sale.collectedBy,
      });
      const link = await download(trx, app);
      // Without a READY build there is no link to send yet.
      const emailQueued =
        sale.email && link
          ? await deps.outbox.queueDeliveryEmail(trx, deliveryEmailRequest({ app, license, email: sale.email }, link))
          : false;
      return { fee, download: link, emailQueued };
    },
  };
}

export type SoldLicenses = ReturnType<typeof createSoldLicenses>;
