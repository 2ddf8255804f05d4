import type { Logger } from 'pino';
import type { AccountDeactivation } from '../accounts/deactivation.js';
import type { FeeLedger } from '../billing/fees.js';
import { ledgerOnlyFeeReporter } from '../billing/usage-reporter.js';
import type { DownloadLinks } from '../builds/download-link.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Db } from '../db/knex.js';
import type { EmailOutbox } from '../email/outbox.js';
import { createEntitlements } from '../entitlements/entitlement.js';
import { checkoutEntitlementRoutes } from '../entitlements/entitlement-routes.js';
import { createEntitlementStore } from '../entitlements/entitlement-store.js';
import { createProcessorConnect } from './connect.js';
import { createConnectStore } from './connect-store.js';
import { createFulfilment } from './fulfilment.js';
import { createLinksStore } from './links-store.js';
import { paymentRoutes } from './routes.js';
import { createSalesLinks } from './sales-links.js';
import { salesLinkRoutes } from './sales-link-routes.js';
import { createPaymentsService } from './service.js';
import { createPaymentsStore } from './store.js';
import { createStripeFeeReporter } from './stripe-fee-reporter.js';
import { createStripeClient, createStripeProcessor } from './stripe-processor.js';
import { createSubscriptionLicenses } from './subscription-licenses.js';
import { createSubscriptions } from './subscriptions.js';
import { createWebhookHandler } from './webhook.js';

/** The payments domain assembled: Stripe when a key is configured, else routes that answer 503. */
export function createPayments(deps: {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  links: DownloadLinks;
  fees: Pick<FeeLedger, 'recordLicenseFee' | 'reportUnbilledFees'>;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail' | 'queuePaymentFailedEmail'>;
  /** Starts the emails a committed notification queued at once. */
  wakeJobs: () => void;
  deactivation: AccountDeactivation;
}) {
  const { clock } = deps;
  const store = createPaymentsStore(deps.db);
  const stripe = deps.config.stripe ? createStripeClient(deps.config.stripe) : null;
  const processor = deps.config.stripe && stripe ? createStripeProcessor(deps.config.stripe, stripe) : null;
  // Fees are kept in the ledger only until a processor is configured to bill them.
  const feeReporter = stripe ? createStripeFeeReporter({ stripe }) : ledgerOnlyFeeReporter;
  const service = createPaymentsService({ store, processor, clock });
  const connect = createProcessorConnect({
    store: createConnectStore(deps.db),
    payments: service,
    processor,
    connectClientId: deps.config.stripe?.connectClientId,
    clock,
    publicBaseUrl: deps.config.publicBaseUrl,
    deactivation: deps.deactivation,
  });
  const linksStore = createLinksStore(deps.db);
  const salesLinks = createSalesLinks({ store: linksStore, processor, clock, publicBaseUrl: deps.config.publicBaseUrl });
  const receiveWebhook =
    processor &&
    createWebhookHandler({
      processor,
      store,
      clock,
      fulfilSession: createFulfilment({
        store,
        links: deps.links,
        fees: deps.fees,
        outbox: deps.outbox,
        linksStore,
        platformApplication: deps.config.stripe?.connectClientId,
        clock,
        log: deps.log,
      }),
      applySubscriptionEvent: createSubscriptions({ store, outbox: deps.outbox, fees: deps.fees, log: deps.log }),
      applyLicenseSubscriptionEvent: createSubscriptionLicenses({ store, clock }),
      afterCommit: deps.wakeJobs,
    });
  const entitlements = createEntitlements({
    store: createEntitlementStore(deps.db),
    links: deps.links,
    outbox: deps.outbox,
    wakeJobs: deps.wakeJobs,
  });
  return {
    service,
    entitlements,
    feeReporter,
    retireLinkOf: salesLinks.retireLinkOf,
    routes: [...paymentRoutes(service, connect, deps.config.publicBaseUrl, receiveWebhook), ...checkoutEntitlementRoutes(entitlements), ...salesLinkRoutes(salesLinks)],
  };
}
