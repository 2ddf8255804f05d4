import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { feeDue, LICENSE_FEE_CENTS, type FeeCollection } from '../billing/fee-rule.js';
import type { FeeLedger } from '../billing/fees.js';
import type { Clock } from '../clock.js';
import type { DownloadLinks } from '../builds/download-link.js';
import { newId, sha256Hex } from '../crypto/secrets.js';
import { offerPerPlatform } from '../delivery/deliverable-builds.js';
import { createSoldLicenses, deliveryEmailRequest, linkOffers } from '../delivery/sold-license.js';
import { deliveryEmail, type EmailOutbox } from '../email/outbox.js';
import { newLicenseKey } from '../licenses/license-key.js';
import type { LinksStore } from './links-store.js';
import { PRICE_CURRENCY } from './price-rules.js';
import type { ProcessorCheckoutSession } from './processor.js';
import type { PaymentsStore, SaleContext } from './store.js';
import { subscriptionLicenseExpiry } from './subscription-licenses.js';

/** docs/contract.md's source label for licenses sold through the developer's connected processor account. */
export const DIRECT_PAYMENT_SOURCE = 'direct_payment';

/** What fulfilment did with a paid session; recorded on the event and answered to the processor. */
export type FulfilmentOutcome =
  | 'fulfilled'
  | 'already_fulfilled'
  | 'not_paid'
  | 'account_not_connected'
  /** docs/contract.md's plan rules: paid sales need an active Pro subscription (see accounts/plan.ts). */
  | 'plan_required'
  | 'no_matching_app'
  /** A Route A link that was replaced, paused, or made before the account was reconnected. */
  | 'payment_link_inactive';

/** The session id is a secret (it unlocks the entitlement): stored only as its hash, shown masked. */
export const sessionHash = (sessionId: string) => sha256Hex(`checkout-session:${sessionId}`);
const maskSessionId = (sessionId: string) => `${sessionId.slice(0, 3)}...${sessionId.slice(-6)}`;

/**
 * Mints the license of a paid checkout session once (or, for a Route B purchase session, converts
 * the license it was made for), with its platform fee and, when the session collected an email,
 * the delivery email, all in the caller's transaction.
 */
export function createFulfilment(deps: {
  store: PaymentsStore;
  links: DownloadLinks;
  fees: Pick<FeeLedger, 'recordLicenseFee'>;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
  linksStore: LinksStore;
  /** Our Connect application (`ca_...`): the application of every payment link this service made. */
  platformApplication: string | undefined;
  clock: Clock;
  log: Logger;
}) {
  const { store } = deps;
  const sold = createSoldLicenses({ fees: deps.fees, outbox: deps.outbox, links: deps.links });

  /**
   * How the session's fee reaches the platform, or null when its Route A link may no longer sell
   * (docs/contract.md: links stop delivering until regenerated). Only the Connect platform that makes a link
   * can set its application fee, and only to itself: a link of ours that is no longer stored (its app was
   * deleted) sells nothing; any other link is the developer's own (Route C), or another platform's, and pays
   * us no fee: it is reported as usage.
   */
  async function feeCollection(
    trx: Knex.Transaction,
    developer: { id: string; payment_connection_generation: number },
    session: ProcessorCheckoutSession,
  ): Promise<FeeCollection | null> {
    if (!session.paymentLinkId) return 'usage_report';
    const link = await deps.linksStore.linkById(trx, session.paymentLinkId);
    if (!link) {
      if (!deps.platformApplication || session.paymentLinkApplication !== deps.platformApplication) return 'usage_report';
      deps.log.warn({ developer_id: developer.id, payment_link_id: session.paymentLinkId }, 'sale through a payment link of a deleted app delivered no license');
      return null;
    }
    if (link.developer_id !== developer.id || link.deactivated_at || link.connection_generation !== developer.payment_connection_generation) {
      deps.log.warn({ developer_id: developer.id, app_id: link.app_id, payment_link_id: link.id }, 'sale through an inactive payment link delivered no license');
      return null;
    }
    // Route A sets the fixed application fee on one-time USD prices only (price-rules.ts takesFixedFee).
    // What the sale actually paid decides: a link made before that rule on another currency's price
    // took 400 of that currency, which is not the fee, so its fee is reported as usage.
    const tookTheFee = session.mode === 'payment' && session.applicationFeeAmount === LICENSE_FEE_CENTS && session.currency === PRICE_CURRENCY;
    return tookTheFee ? 'application_fee' : 'usage_report';
  }

  /** What fulfilling the claimed event did; `settled` when the statement that sold the license settled the event too. */
  async function fulfil(
    trx: Knex.Transaction,
    eventId: string,
    sale: SaleContext | undefined,
    session: ProcessorCheckoutSession,
    now: Date,
  ): Promise<{ outcome: FulfilmentOutcome; settled?: true }> {
    if (session.paymentStatus !== 'paid') return { outcome: 'not_paid' };
    // Only the connected account's own sessions: a disconnected account's links deliver nothing.
    if (!sale) return { outcome: 'account_not_connected' };
    const { developer, app } = sale;
    if (developer.plan !== 'pro') {
      // The buyer has paid the developer's account: say so loudly, so the developer refunds or renews and provisions by hand.
      deps.log.warn({ developer_id: developer.id }, 'paid sale delivered no license: the developer has no active Pro subscription');
      return { outcome: 'plan_required' };
    }
    if (!app) return { outcome: 'no_matching_app' };

    const collectedBy = await feeCollection(trx, developer, session);
    if (!collectedBy) return { outcome: 'payment_link_inactive' };

    const email = session.customerEmail?.trim() || null;
    const licenseType = session.mode === 'subscription' ? 'subscription' : 'perpetual';
    const test = !session.livemode;
    const paid = {
      payment_session_id: maskSessionId(session.id),
      payment_session_hash: sessionHash(session.id),
      // A subscription license runs to the end of the period paid; its renewals extend it (subscription-licenses.ts).
      expires_at: session.subscription ? subscriptionLicenseExpiry(session.subscription.currentPeriodEnd) : null,
      processor_subscription_id: session.subscription?.id ?? null,
    };
    // Route B: the session pays for an existing license, which it converts instead of minting one.
    // Its metadata names the license, but only the stored session hash makes it a purchase session.
    if (session.metadata.license_id) {
      const purchase = await deps.linksStore.completePurchaseSession(trx, developer.id, paid.payment_session_hash, now);
      if (purchase) {
        if (purchase.completed) return { outcome: 'already_fulfilled' };
        const license = await deps.linksStore.convertPurchasedLicense(trx, purchase.licenseId, { license_type: licenseType, email, ...paid, now });
        if (!license) return { outcome: 'already_fulfilled' };
        await sold.chargeAndDeliver(trx, { app, license, email, source: DIRECT_PAYMENT_SOURCE, licenseType, test, collectedBy });
        return { outcome: 'fulfilled' };
      }
    }

    // A new license, its fee and its delivery email in one statement: what chargeAndDeliver does,
    // from the same owners' rules (billing's feeDue, the delivery email) and their SQL text.
    // Without a READY build no email goes out yet; the entitlement endpoint's first success mails it later.
    const license = { id: newId('lic'), license_key: newLicenseKey() };
    const fee = feeDue({ licenseId: license.id, licenseType, test, collectedBy });
    const { download, downloads } = linkOffers(deps.links, offerPerPlatform(app.platforms, sale.builds));
    const fulfilled: FulfilmentOutcome = 'fulfilled';
    const alreadyFulfilled: FulfilmentOutcome = 'already_fulfilled';
    const minted = await store.sellSessionLicense(
      trx,
      {
        license: {
          ...license,
          developer_id: developer.id,
          app_id: app.id,
          license_type: licenseType,
          device_limit: app.default_device_limit,
          email,
          source: DIRECT_PAYMENT_SOURCE,
          ...paid,
        },
        fee: fee && { ...fee, developer_id: developer.id, app_id: app.id, source: DIRECT_PAYMENT_SOURCE, charged_at: now },
        email: email && download ? deliveryEmail(deliveryEmailRequest({ app, license, email }, { download, downloads })) : null,
      },
      { eventId, sold: fulfilled, alreadySold: alreadyFulfilled },
    );
    return { outcome: minted ? fulfilled : alreadyFulfilled, settled: true };
  }

  /**
   * Processes a paid session's notification once per event id, in `trx`: claims the event (in one
   * statement with what the sale reads), sells, and settles the event with the outcome; `duplicate`
   * when the event was already processed (a concurrent twin waits for the first to commit).
   */
  return async function fulfilSession(
    trx: Knex.Transaction,
    event: { id: string; type: string },
    accountId: string,
    session: ProcessorCheckoutSession,
  ): Promise<FulfilmentOutcome | 'duplicate'> {
    const now = deps.clock.now();
    const claim = await store.claimSale(trx, event, { accountId, now, priceIds: session.priceIds, appId: session.metadata.service_app_id });
    if (!claim.claimed) return 'duplicate';
    const { outcome, settled } = await fulfil(trx, event.id, claim.sale, session, now);
    if (!settled) await store.settleEvent(trx, event.id, outcome);
    return outcome;
  };
}

export type FulfilSession = ReturnType<typeof createFulfilment>;
