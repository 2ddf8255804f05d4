import type { Logger } from 'pino';
import type { FeeLedger } from '../billing/fees.js';
import type { DownloadLinks } from '../builds/download-link.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Db } from '../db/knex.js';
import type { EmailOutbox } from '../email/outbox.js';
import { createFulfilment } from './fulfilment.js';
import { paymentRoutes } from './routes.js';
import { createPaymentsService } from './service.js';
import { createPaymentsStore } from './store.js';
import { createStripeProcessor } from './stripe-processor.js';
import { createSubscriptions } from './subscriptions.js';
import { createWebhookHandler } from './webhook.js';

/** The payments domain assembled: Stripe when a key is configured, else routes that answer 503. */
export function createPayments(deps: {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  links: DownloadLinks;
  fees: Pick<FeeLedger, 'recordLicenseFee'>;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
  /** Starts jobs queued by a committed notification (emails, fee reports) at once. */
  wakeJobs: () => void;
}) {
  const { clock } = deps;
  const store = createPaymentsStore(deps.db);
  const processor = deps.config.stripe ? createStripeProcessor(deps.config.stripe) : null;
  const service = createPaymentsService({ store, processor, clock });
  const receiveWebhook =
    processor &&
    createWebhookHandler({
      processor,
      store,
      clock,
      fulfilSession: createFulfilment({ store, links: deps.links, fees: deps.fees, outbox: deps.outbox }),
      applySubscriptionEvent: createSubscriptions({ store, log: deps.log }),
      afterCommit: deps.wakeJobs,
    });
  return { service, routes: paymentRoutes(service, receiveWebhook) };
}
