import type Koa from 'koa';
import type { DownloadLinks } from '../builds/download-link.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { Db } from '../db/knex.js';
import type { EmailOutbox } from '../email/outbox.js';
import type { BlobStorage } from '../storage/blob-storage.js';
import { createCompanions } from './companions.js';
import { createWebhookCredentials } from './credentials.js';
import { createStoreDeliveryPages } from './delivery-page.js';
import { createInstallerDownloads } from './installer-download.js';
import { createMeteredDownloads } from './metered-download.js';
import { createStoreOffer } from './offer.js';
import { entitlementRoutes } from './routes.js';
import { createEntitlementEvents } from './service.js';
import { createWebhookSettings } from './settings.js';
import { createEntitlementsStore } from './store.js';
import { createDeliveryTokens } from './tokens.js';

/** The commerce-platform entitlement webhook assembled: its routes, and the credential check the authenticator calls. */
export function createEntitlementWebhook(deps: {
  config: Pick<Config, 'publicBaseUrl' | 'deliveryUrlBase'>;
  db: Db;
  clock: Clock;
  masterKey: MasterKey;
  storage: BlobStorage;
  outbox: Pick<EmailOutbox, 'queueDeliveryEmail'>;
  wakeJobs: () => void;
  links: Pick<DownloadLinks, 'check'>;
  /** Sends a READY build as a plain signed link does: an installer's download of a license that is not a store's. */
  sendBuild: (ctx: Koa.Context, buildId: string) => Promise<void>;
}) {
  const { clock, wakeJobs } = deps;
  const store = createEntitlementsStore(deps.db);
  const tokens = createDeliveryTokens(deps.masterKey, deps.config.deliveryUrlBase);
  const offer = createStoreOffer({ store, tokens, outbox: deps.outbox });
  // The webhooks this process verified: the authenticator's memory, confirmed by each request's transaction.
  const credentials = createWebhookCredentials();
  const settings = createWebhookSettings({ store, clock, publicBaseUrl: deps.config.publicBaseUrl, credentials });
  const events = createEntitlementEvents({ store, offer, credentials, clock, wakeJobs });
  const companions = createCompanions({ store, offer, clock, credentials, wakeJobs });
  const metered = createMeteredDownloads({ store, offer, storage: deps.storage, clock });
  const pages = createStoreDeliveryPages({ store, offer, tokens, metered, clock });
  const installer = createInstallerDownloads({ store, metered, links: deps.links, clock, plain: deps.sendBuild });
  return { verify: settings.verify, routes: entitlementRoutes({ settings, events, companions, pages, installer }) };
}
