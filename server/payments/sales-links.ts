import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { RequestError } from '../errors.js';
import { LICENSE_FEE_CENTS } from '../billing/fee-rule.js';
import { sessionHash } from './fulfilment.js';
import type { LinksStore, PaymentLinkRow, SalesSetup } from './links-store.js';
import { askProcessor, requireProcessor } from './service.js';
import { AccountAccessRevokedError, type PaymentProcessor, type ProcessorPrice } from './processor.js';
import { takesFixedFee } from './price-rules.js';

/** Stripe's shortest checkout session lifetime: Route B's links live no longer. */
export const PURCHASE_SESSION_MINUTES = 30;

/**
 * docs/contract.md's redirect form C.1, where Routes A and B send the buyer after paying. The braces are
 * literal: the processor puts the session id there itself.
 */
export const downloadRedirectUrl = (publicBaseUrl: string, appId: string) => `${publicBaseUrl}/download?session_id={CHECKOUT_SESSION_ID}&app_id=${encodeURIComponent(appId)}`;

export const paymentLinkView = (link: PaymentLinkRow, currentGeneration: number) => ({
  id: link.id,
  url: link.url,
  created_at: link.created_at.toISOString(),
  // Made before the account was reconnected: it takes no more sales until regenerated.
  delivering: link.connection_generation === currentGeneration,
});

/** Paid sales need Pro, a connected account and a saved Price, checked in that order. */
function assertCanSell(setup: SalesSetup): asserts setup is SalesSetup & { payment_account_id: string; price_id: string } {
  if (setup.plan !== 'pro') throw new RequestError('PLAN_REQUIRED', 'Selling licenses needs a Pro subscription');
  if (!setup.payment_account_id) {
    throw new RequestError('PAYMENT_ACCOUNT_NOT_CONNECTED', 'Connect your payment processor account (POST /v1/payments/account/connect, or Settings in the portal) first');
  }
  if (!setup.price_id) throw new RequestError('PRICE_ID_NOT_SET', 'Save a Price ID on the app (PUT /v1/apps/{app_id}) first');
}

/** The saved Price as the processor has it now (archived since, or removed: a 409 rather than a broken link). */
async function currentPrice(processor: PaymentProcessor, accountId: string, priceId: string): Promise<ProcessorPrice> {
  const price = await askProcessor(() => processor.retrievePrice(accountId, priceId));
  if (!price?.active) throw new RequestError('PRICE_ID_NOT_SET', `The app's Price ${priceId} is no longer active on your connected account; save another`);
  return price;
}

/**
 * Stops `link` selling at the processor. An account that no longer grants this platform access (the
 * developer disconnected it, or switched to another) cannot be reached: its link is as good as
 * retired, and sells nothing of ours any more.
 */
function retireAtProcessor(processor: PaymentProcessor, link: Pick<PaymentLinkRow, 'account_id' | 'id'>): Promise<void> {
  return askProcessor(() =>
    processor.deactivatePaymentLink(link.account_id, link.id).catch((err: unknown) => {
      if (!(err instanceof AccountAccessRevokedError)) throw err;
    }),
  );
}

/** Routes A (the app's reusable payment link) and B (a single-use checkout for one license). */
export function createSalesLinks(deps: { store: LinksStore; processor: PaymentProcessor | null; clock: Clock; publicBaseUrl: string }) {
  const { store, clock } = deps;
  const appNotFound = () => new RequestError('APP_NOT_FOUND', 'No such app');

  return {
    /**
     * Creates the app's payment link, replacing (and deactivating at the processor) the one before.
     * The old link is deactivated first: if creating the new one fails, sales are paused, never doubled.
     */
    async generatePaymentLink(developerId: string, appId: string) {
      const processor = requireProcessor(deps.processor);
      // The app row stays locked across the processor calls: a rare developer operation, and two
      // concurrent regenerations must not both leave a link selling.
      return store.transaction(async (trx) => {
        const setup = await store.lockSalesSetup(trx, developerId, appId, clock.now());
        if (!setup) throw appNotFound();
        assertCanSell(setup);
        const price = await currentPrice(processor, setup.payment_account_id, setup.price_id);
        const previous = await store.currentLink(appId, trx);
        if (previous) {
          await retireAtProcessor(processor, previous);
          await store.deactivateLink(trx, previous.id, clock.now());
        }
        const created = await askProcessor(() =>
          processor.createPaymentLink(setup.payment_account_id, {
            priceId: setup.price_id,
            appId,
            // The processor takes exactly the fee from the sale, or it is reported as usage once (price-rules.ts).
            applicationFeeCents: takesFixedFee(price) ? LICENSE_FEE_CENTS : null,
            redirectUrl: downloadRedirectUrl(deps.publicBaseUrl, appId),
          }),
        );
        const row = {
          id: created.id,
          app_id: appId,
          developer_id: developerId,
          account_id: setup.payment_account_id,
          url: created.url,
          connection_generation: setup.payment_connection_generation,
          created_at: clock.now(),
        };
        await store.insertLink(trx, row);
        return paymentLinkView({ ...row, deactivated_at: null }, setup.payment_connection_generation);
      });
    },

    async currentPaymentLink(developerId: string, appId: string) {
      if (!(await store.appExists(developerId, appId))) throw appNotFound();
      const link = await store.currentLink(appId);
      if (!link) throw new RequestError('PAYMENT_LINK_NOT_FOUND', 'The app has no payment link; create one with POST');
      return paymentLinkView(link, await store.connectionGeneration(developerId));
    },

    /** Pauses sales: the link is deactivated at the processor and here. */
    async removePaymentLink(developerId: string, appId: string): Promise<void> {
      const processor = requireProcessor(deps.processor);
      await store.transaction(async (trx) => {
        if (!(await store.lockSalesSetup(trx, developerId, appId, clock.now()))) throw appNotFound();
        const link = await store.currentLink(appId, trx);
        if (!link) throw new RequestError('PAYMENT_LINK_NOT_FOUND', 'The app has no payment link');
        await retireAtProcessor(processor, link);
        await store.deactivateLink(trx, link.id, clock.now());
      });
    },

    /**
     * Before the app is deleted, in the deleting transaction (`trx`, which then holds the app's row
     * until the app is gone, so no link can be made in between): its link stops selling at the
     * processor, so no buyer pays through it for a license nobody would deliver. A processor that
     * cannot be reached refuses the deletion (503), to be tried again.
     */
    async retireLinkOf(trx: Knex.Transaction, developerId: string, appId: string): Promise<void> {
      const processor = deps.processor;
      if (!processor || !(await store.lockSalesSetup(trx, developerId, appId, clock.now()))) return;
      const link = await store.currentLink(appId, trx);
      if (!link) return;
      await retireAtProcessor(processor, link);
      await store.deactivateLink(trx, link.id, clock.now());
    },

    /** Route B: a checkout of the license's app Price whose payment converts that license (fulfilment). */
    async createPurchaseLink(developerId: string, licenseId: string) {
      const processor = requireProcessor(deps.processor);
      const now = clock.now();
      const license = await store.purchasableLicense(developerId, licenseId, now);
      if (!license) throw new RequestError('LICENSE_NOT_FOUND', 'No such license');
      if (license.effective_status === 'REVOKED') throw new RequestError('LICENSE_NOT_PURCHASABLE', 'A revoked license cannot be bought');
      if (license.effective_status === 'ACTIVE' && license.license_type !== 'trial') {
        throw new RequestError('LICENSE_NOT_PURCHASABLE', 'The license is already paid for and active');
      }
      assertCanSell(license);
      const price = await currentPrice(processor, license.payment_account_id, license.price_id);
      const expiresAt = new Date(now.getTime() + PURCHASE_SESSION_MINUTES * 60_000);
      const session = await askProcessor(() =>
        processor.createCheckoutSession(license.payment_account_id, {
          priceId: license.price_id,
          mode: price.type === 'recurring' ? 'subscription' : 'payment',
          metadata: { service_app_id: license.app_id, license_id: licenseId },
          successUrl: downloadRedirectUrl(deps.publicBaseUrl, license.app_id),
          expiresAt,
        }),
      );
      await store.insertPurchaseSession({ session_hash: sessionHash(session.id), license_id: licenseId, developer_id: developerId, expires_at: expiresAt, created_at: now });
      return { checkout_url: session.url, expires_at: expiresAt.toISOString() };
    },
  };
}

export type SalesLinks = ReturnType<typeof createSalesLinks>;
