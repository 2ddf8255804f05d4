import type { Knex } from 'knex';
import type { FeeCollection } from '../billing/fee-rule.js';
import type { FeeLedger } from '../billing/fees.js';
import type { DownloadLinks } from '../builds/download-link.js';
import type { DeliveryEmailRequest, EmailOutbox } from '../email/outbox.js';
import type { LicenseType } from '../licenses/rules.js';
import { newestDeliverableBuilds, newestOffer, offerPerPlatform, type DeliverableBuild, type DeliveredApp, type PlatformOffer } from './deliverable-builds.js';

/** The app a license was sold for, with what its delivery needs. */
export interface SoldApp extends DeliveredApp {
  developer_id: string;
  name: string;
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

/** The signed link (7 days) to the build one of the app's platforms gets. */
export interface PlatformDownload {
  platform: string;
  /** The build's own platform: `platform`, or `cross_platform` when that platform has no build of its own. */
  build_platform: string;
  build_id: string;
  version: string | null;
  package_name: string;
  download_url: string;
  download_expires_at: string;
}

/**
 * What a buyer may download: one link per platform the app ships (`downloads`), and `download`,
 * the newest of them, which the single-link answer fields carry (null while no build is READY).
 */
export interface Downloads {
  download: Download | null;
  downloads: PlatformDownload[];
}

/** Signs a link to each offer's build (one per build, shared by platforms served by the same one); `since` as in DownloadLinks.create. */
export function linkOffers(links: DownloadLinks, offers: readonly PlatformOffer[], since?: Date): Downloads {
  const signed = new Map<string, { download_url: string; expires_at: string }>();
  const linkOf = (buildId: string) => signed.get(buildId) ?? signed.set(buildId, links.create(buildId, since)).get(buildId)!;
  const downloads = offers.map(({ platform, build }) => {
    const link = linkOf(build.id);
    return {
      platform,
      build_platform: build.platform,
      build_id: build.id,
      version: build.version,
      package_name: build.package_name,
      download_url: link.download_url,
      download_expires_at: link.expires_at,
    };
  });
  const newest = newestOffer(offers);
  const single = newest && downloads.find((d) => d.build_id === newest.build.id)!;
  return {
    download: single ? { download_url: single.download_url, download_expires_at: single.download_expires_at, build_id: single.build_id, app_version: single.version } : null,
    downloads,
  };
}

export interface SaleDelivery extends Downloads {
  /** Whether the delivery email was queued (call `queue.wake()` after the commit). */
  emailQueued: boolean;
}

/** The delivery email of a sold license with a link to the build of each platform. */
export function deliveryEmailRequest(
  sale: { app: Pick<SoldApp, 'id' | 'developer_id' | 'name'>; license: Sale['license']; email: string },
  { download: link, downloads }: { download: Download; downloads: PlatformDownload[] },
): DeliveryEmailRequest {
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
    downloads: downloads.map((d) => ({ platform: d.platform, url: d.download_url, version: d.version ?? undefined })),
  };
}

/**
 * What every channel does once it has minted a sold license, in the transaction that minted it:
 * the platform fee (once per license; trial and test licenses exempt), the download link and, when
 * the buyer gave an address and a build is ready, the delivery email. Marketplace provisioning and
 * Route B purchase sessions use it; checkout sales, code redemption and the entitlement webhook do
 * the same in one statement each, from the same owners' text (billing/store.ts chargeFeeCtes,
 * email/store.ts queueEmailCtes), and read their links with `downloads` or `linkOffers` here.
 */
export function createSoldLicenses(deps: { fees: Pick<FeeLedger, 'recordLicenseFee'>; outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>; links: DownloadLinks }) {
  /** A signed link (7 days) to the build of each of `platforms`, from the app's newest deliverable builds (read with the sale's statement). */
  const downloadsOf = (platforms: readonly string[], builds: readonly DeliverableBuild[]): Downloads => linkOffers(deps.links, offerPerPlatform(platforms, builds));

  /** The same, the builds read in `q` (the channel's transaction). */
  async function downloads(q: Knex, app: DeliveredApp): Promise<Downloads> {
    return downloadsOf(app.platforms, await newestDeliverableBuilds(q, app));
  }

  return {
    downloads,
    downloadsOf,

    async chargeAndDeliver(trx: Knex.Transaction, sale: Sale): Promise<SaleDelivery> {
      const { app, license } = sale;
      await deps.fees.recordLicenseFee(trx, {
        licenseId: license.id,
        appId: app.id,
        developerId: app.developer_id,
        source: sale.source,
        licenseType: sale.licenseType,
        test: sale.test,
        collectedBy: sale.collectedBy,
      });
      const offered = await downloads(trx, app);
      const { download } = offered;
      // Without a READY build there is no link to send yet.
      const emailQueued =
        sale.email && download
          ? await deps.outbox.queueDeliveryEmail(trx, deliveryEmailRequest({ app, license, email: sale.email }, { download, downloads: offered.downloads }))
          : false;
      return { ...offered, emailQueued };
    },
  };
}

export type SoldLicenses = ReturnType<typeof createSoldLicenses>;
