import type { Knex } from 'knex';
import type { FeeLedger } from '../billing/fees.js';
import type { DownloadLinks } from '../builds/download-link.js';
import { newId, sha256Hex } from '../crypto/secrets.js';
import type { EmailOutbox } from '../email/outbox.js';
import { newLicenseKey } from '../licenses/license-key.js';
import type { ProcessorCheckoutSession } from './processor.js';
import type { PaymentsStore } from './store.js';

/** SPEC.md's source label for licenses sold through the developer's connected processor account. */
export const DIRECT_PAYMENT_SOURCE = 'direct_payment';

/** What fulfilment did with a paid session; recorded on the event and answered to the processor. */
export type FulfilmentOutcome = 'fulfilled' | 'already_fulfilled' | 'not_paid' | 'account_not_connected' | 'no_matching_app';

/** The session id is a secret (it unlocks the entitlement): stored only as its hash, shown masked. */
export const sessionHash = (sessionId: string) => sha256Hex(`checkout-session:${sessionId}`);
const maskSessionId = (sessionId: string) => `${sessionId.slice(0, 3)}...${sessionId.slice(-6)}`;

/**
 * Mints the license of a paid checkout session once, with its platform fee and, when the session
 * collected an email, the delivery email, all in the caller's transaction.
 */
export function createFulfilment(deps: {
  store: PaymentsStore;
  links: DownloadLinks;
  fees: Pick<FeeLedger, 'recordLicenseFee'>;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
}) {
  const { store } = deps;

  return async function fulfilSession(trx: Knex.Transaction, accountId: string, session: ProcessorCheckoutSession): Promise<FulfilmentOutcome> {
    if (session.paymentStatus !== 'paid') return 'not_paid';
    // Only the connected account's own sessions: a disconnected account's links deliver nothing.
    const developer = await store.developerOfAccount(trx, accountId);
    if (!developer) return 'account_not_connected';
    const app = await store.saleApp(trx, developer.id, { priceIds: session.priceIds, appId: session.metadata.service_app_id });
    if (!app) return 'no_matching_app';

    const email = session.customerEmail?.trim() || null;
    const license = await store.mintSessionLicense(trx, {
      id: newId('lic'),
      developer_id: developer.id,
      app_id: app.id,
      license_key: newLicenseKey(),
      license_type: session.mode === 'subscription' ? 'subscription' : 'perpetual',
      device_limit: app.default_device_limit,
      email,
      source: DIRECT_PAYMENT_SOURCE,
      payment_session_id: maskSessionId(session.id),
      payment_session_hash: sessionHash(session.id),
    });
    if (!license) return 'already_fulfilled';

    await deps.fees.recordLicenseFee(trx, {
      licenseId: license.id,
      appId: app.id,
      developerId: developer.id,
      source: DIRECT_PAYMENT_SOURCE,
      licenseType: session.mode === 'subscription' ? 'subscription' : 'perpetual',
      test: !session.livemode,
    });
    const build = await store.latestDeliverableBuild(trx, app);
    // Without a READY build there is no link to send yet; the entitlement endpoint's first success mails it later.
    if (email && build) {
      const link = deps.links.create(build.id);
      await deps.outbox.queueDeliveryEmail(trx, {
        developerId: developer.id,
        appId: app.id,
        licenseId: license.id,
        recipient: email,
        appName: app.name,
        licenseKey: license.license_key,
        downloadUrl: link.download_url,
        downloadExpiresAt: link.expires_at,
      });
    }
    return 'fulfilled';
  };
}

export type FulfilSession = ReturnType<typeof createFulfilment>;
