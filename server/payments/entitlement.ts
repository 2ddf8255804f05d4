import type { Knex } from 'knex';
import type { DownloadLinks } from '../builds/download-link.js';
import type { EmailOutbox } from '../email/outbox.js';
import { assertThat, RequestError } from '../errors.js';
import { sessionHash } from './fulfilment.js';
import type { EntitledLicense, EntitlementStore } from './entitlement-store.js';
import type { PaymentsStore } from './store.js';

/** What a buyer gets: docs/contract.md's six fields, plus `note` saying why the download fields are null. */
export interface Entitlement {
  license_key: string;
  download_url: string | null;
  download_expires_at: string | null;
  app_name: string;
  app_version: string | null;
  customer_email: string | null;
  note: string | null;
  /** The build the link points to: a refresh re-signs the link but names the same build. */
  build_id: string | null;
}

export const NOT_PROVISIONED_DETAIL = 'license not yet provisioned; retry in about 2 seconds';
const NO_BUILD_NOTE = 'No build of this app is ready for download yet; the license key already works. Ask again later for the download link.';

/**
 * The customer-facing delivery: the entitlement of a checkout session (public endpoint, hosted
 * page) and the delivery email for a storefront buyer who names only an email address.
 */
export function createEntitlements(deps: {
  store: EntitlementStore;
  builds: Pick<PaymentsStore, 'latestDeliverableBuild'>;
  links: DownloadLinks;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
  /** Starts the queued delivery email at once, after the commit. */
  wakeJobs: () => void;
}) {
  const { store, links } = deps;

  /** The download link and, when the license has an address, the delivery email (queued once per license and address). */
  async function deliver(trx: Knex.Transaction, license: EntitledLicense): Promise<{ entitlement: Entitlement; queued: boolean }> {
    const build = await deps.builds.latestDeliverableBuild(trx, { id: license.app_id, delivery_mode: license.delivery_mode });
    const link = build ? links.create(build.id) : null;
    const entitlement: Entitlement = {
      license_key: license.license_key,
      download_url: link?.download_url ?? null,
      download_expires_at: link?.expires_at ?? null,
      app_name: license.app_name,
      app_version: build?.version ?? null,
      customer_email: license.email,
      note: link ? null : NO_BUILD_NOTE,
      build_id: build?.id ?? null,
    };
    // Without a build there is no link to mail yet: the first return that has one sends it.
    const queued =
      license.email && link
        ? await deps.outbox.queueDeliveryEmail(trx, {
            developerId: license.developer_id,
            appId: license.app_id,
            licenseId: license.id,
            recipient: license.email,
            appName: license.app_name,
            appVersion: build?.version ?? undefined,
            licenseKey: license.license_key,
            downloadUrl: link.download_url,
            downloadExpiresAt: link.expires_at,
          })
        : false;
    return { entitlement, queued };
  }

  async function withDelivery<T>(work: (trx: Knex.Transaction) => Promise<{ result: T; queued: boolean }>): Promise<T> {
    const { result, queued } = await store.transaction(work);
    if (queued) deps.wakeJobs();
    return result;
  }

  return {
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
     * A storefront buyer named by an address, which is no secret: nothing is shown, the delivery
     * email goes to that address if it bought a license (once per license and address).
     */
    emailForAddress: (appId: string, email: string): Promise<void> =>
      withDelivery(async (trx) => {
        assertThat(await store.appExists(trx, appId), 'APP_NOT_FOUND', 'No such app');
        const license = await store.latestLicenseForEmail(trx, appId, email);
        return { result: undefined, queued: license ? (await deliver(trx, license)).queued : false };
      }),
  };
}

export type Entitlements = ReturnType<typeof createEntitlements>;
