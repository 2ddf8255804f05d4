import { RequestError } from './errors.js';
import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { createAccountDeactivation } from './accounts/deactivation.js';
import { accountRoutes, adminRoutes } from './accounts/routes.js';
import { createAccountsService } from './accounts/service.js';
import { createOfflineActivation, offlineActivationRoutes } from './activations/offline-activation.js';
import { activationRoutes } from './activations/routes.js';
import { createActivationsService } from './activations/service.js';
import { createContentKeyRelease } from './activations/content-key-release.js';
import { createActivationsStore } from './activations/store.js';
import { appRoutes } from './apps/routes.js';
import { createAppsService } from './apps/service.js';
import { createAppsStore } from './apps/store.js';
import { createFeeLedger } from './billing/fees.js';
import { reportLicenseFeeJob } from './billing/report-fee-job.js';
import { createBuilds } from './builds/index.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { MasterKey } from './crypto/master-key.js';
import type { Db } from './db/knex.js';
import { createNotificationListener } from './db/notification-listener.js';
import { createSoldLicenses } from './delivery/sold-license.js';
import { docsPageRouter } from './docs-page/index.js';
import { createEmailOutbox } from './email/outbox.js';
import { sendEmailJob } from './email/send-job.js';
import { createEmailTransport } from './email/transport.js';
import { createEntitlementWebhook } from './entitlements/index.js';
import { createAuthenticator } from './http/auth.js';
import { resolveClientAddress } from './http/client-address.js';
import { publicHttps } from './http/public-https.js';
import { errorHandler } from './http/error-handler.js';
import { createLicenseLimits } from './http/license-limits.js';
import { requestLogging } from './http/logging.js';
import { createMetrics } from './http/metrics.js';
import { buildOpenApi } from './http/openapi.js';
import { createRateLimiter, limitUnhandledRequests } from './http/rate-limit.js';
import { mountRoutes, type RouteDef, type RouteDeps } from './http/route.js';
import { createRuntimeLane } from './http/runtime-lane.js';
import { createJobQueue } from './jobs/queue.js';
import { createJobRunner } from './jobs/runner.js';
import { createTenantQuotas } from './quotas/index.js';
import { meterRoutes } from './licenses/meters/routes.js';
import { createMetersService } from './licenses/meters/service.js';
import { createMetersStore } from './licenses/meters/store.js';
import { licenseRoutes } from './licenses/routes.js';
import { createLicensesService } from './licenses/service.js';
import { createLicensesStore } from './licenses/store.js';
import { marketplaceRoutes } from './marketplace/routes.js';
import { createMarketplace } from './marketplace/service.js';
import { createMarketplaceStore } from './marketplace/store.js';
import { diagnosticsRoutes } from './ops/diagnostics.js';
import { healthRoutes } from './ops/health-routes.js';
import { opsRouter } from './ops/routes.js';
import { passwordResetPageRoutes } from './pages/password-reset-routes.js';
import { offlineActivationPageRoutes } from './pages/offline-activation-routes.js';
import { redeemPageRoutes } from './pages/redeem-routes.js';
import { deliveryPageRoutes } from './pages/routes.js';
import { createPayments } from './payments/index.js';
import { createPortal } from './portal/index.js';
import { redemptionRoutes } from './redemption/routes.js';
import { createRedemption } from './redemption/service.js';
import { createRedemptionStore } from './redemption/store.js';
import type { Keyring } from './signing/keyring.js';
import { signingRoutes } from './signing/routes.js';
import { statsRoutes } from './stats/routes.js';
import { createStatsService } from './stats/service.js';
import { createStatsStore } from './stats/store.js';
import { createUpdateChecks } from './updates/checks.js';
import { updateRoutes } from './updates/routes.js';
import { createPushGuards } from './updates/rules.js';
import { createPushService } from './updates/service.js';
import { createUpdatesStore } from './updates/store.js';

export interface AppDeps {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  masterKey: MasterKey;
  /** Signs runtime tokens and update manifests; its public keys are served at /v1/public/keys. */
  keyring: Keyring;
}

export const API_VERSION = '1.0.0';

/** Builds the Koa application; no listening here, so tests and `main.ts` share it. */
export function createApp(deps: AppDeps) {
  const { config, db, clock, log, masterKey, keyring } = deps;
  // Started and stopped by whoever runs the process, like `jobs`; until it runs, API keys are looked up every time.
  const listener = createNotificationListener(db, log);
  const rateLimiter = createRateLimiter(db, clock, config.rateLimitMultiplier);
  // Limits per license, counted by the runtime statements themselves (the routes' class is `runtime`).
  const licenseLimits = createLicenseLimits(clock, config.rateLimitMultiplier);
  const licenses = createLicensesService({ store: createLicensesStore(db), clock });
  const queue = createJobQueue();
  // Per-tenant quotas; the database enforces the ones counted where rows are written (applyLimits at start).
  const quotas = createTenantQuotas({ db, limits: config.quotas });
  const updatesStore = createUpdatesStore(db);
  // Unreleasing a build and switching an app to released_only answer to the push rules.
  const pushGuards = createPushGuards(updatesStore);
  const builds = createBuilds({ config, db, clock, log, masterKey, keyring, queue, pushGuards, quotas });
  // Side effects of a sale (the platform fee's report, emails) are jobs queued in the sale's transaction.
  const fees = createFeeLedger({ queue, clock });
  const outbox = createEmailOutbox();
  const wakeJobs = () => queue.wake();
  const accounts = createAccountsService({
    db,
    clock,
    masterKey,
    listener,
    outbox,
    wakeJobs,
    publicBaseUrl: config.publicBaseUrl,
  });
  const deactivation = createAccountDeactivation(db);
  const payments = createPayments({ config, db, clock, log, links: builds.links, fees, outbox, wakeJobs, deactivation });
  // The commerce-platform entitlement webhook; the authenticator checks its URL token and secret.
  const entitlementWebhook = createEntitlementWebhook({
    config,
    db,
    clock,
    masterKey,
    storage: builds.storage,
    outbox,
    wakeJobs,
    links: builds.links,
    sendBuild: builds.service.sendBuild,
  });
  // Marketplace provisioning and code redemption sell licenses like checkout fulfilment: fee, link and delivery email in one transaction.
  const sold = createSoldLicenses({ fees, outbox, links: builds.links });
  const marketplace = createMarketplace({ store: createMarketplaceStore(db), sold, clock, wakeJobs });
  const redemption = createRedemption({ store: createRedemptionStore(db), sold, clock, wakeJobs, quotas });
  const apps = createAppsService({
    store: createAppsStore(db),
    removeStoredFiles: builds.service.removeAppFiles,
    retirePaymentLink: payments.retireLinkOf,
    pushGuards,
    checkPriceId: payments.service.checkPriceId,
  });
  const pushes = createPushService({ store: updatesStore, clock });
  const updateChecks = createUpdateChecks({ store: updatesStore, clock, keyring, links: builds.links, limits: licenseLimits });
  const activationsStore = createActivationsStore(db);
  const activations = createActivationsService({
    store: activationsStore,
    clock,
    keyring,
    limits: licenseLimits,
    releaseContentKey: createContentKeyRelease({ db, masterKey }),
    matchRule: config.fingerprintMatch,
  });
  const offlineActivation = createOfflineActivation({ db, clock, keyring, activations });
  const authenticator = createAuthenticator(
    { accessToken: accounts.verifyAccessToken, apiKey: accounts.verifyApiKey, isApiKey: accounts.isApiKey, entitlementWebhook: entitlementWebhook.verify },
    config.adminToken,
  );

  const routes: RouteDef[] = [
    ...healthRoutes(db),
    ...accountRoutes(accounts, rateLimiter),
    ...adminRoutes(accounts),
    ...diagnosticsRoutes({ db, storage: builds.storage, keyring, clock, publicBaseUrl: config.publicBaseUrl }),
    ...appRoutes(apps),
    ...builds.routes,
    ...licenseRoutes(licenses),
    ...meterRoutes(createMetersService({ store: createMetersStore(db), clock, keyring, recordNamedBy: activationsStore.recordNamedBy })),
    ...activationRoutes(activations),
    ...offlineActivationRoutes(offlineActivation),
    ...updateRoutes(pushes, updateChecks),
    ...signingRoutes(keyring),
    ...payments.routes,
    ...deliveryPageRoutes(payments.entitlements),
    ...statsRoutes(createStatsService({ store: createStatsStore(db), clock })),
    ...marketplaceRoutes(marketplace),
    ...redemptionRoutes(redemption),
    ...redeemPageRoutes(redemption, rateLimiter),
    ...offlineActivationPageRoutes(offlineActivation, payments.entitlements),
    ...passwordResetPageRoutes(accounts, rateLimiter),
    ...entitlementWebhook.routes,
  ];
  let openApi: unknown;
  const getOpenApi = () => (openApi ??= buildOpenApi(routes, { version: API_VERSION, serverUrl: config.publicBaseUrl }));

  const api = new Router();
  const routeDeps: RouteDeps = {
    authenticator,
    rateLimiter,
    maxJsonBytes: config.maxJsonBytes,
    refuseChangesIfDeactivated: deactivation.refuseChangesIfDeactivated,
    onUndeclaredError(route, error) {
      const undeclared = `${route.operationId} answered ${error.status} ${error.code}, which its route does not declare`;
      if (config.strictErrors) throw new RequestError('INTERNAL_ERROR', `${undeclared}: add ${error.status} to its errors`);
      log.error({ operation_id: route.operationId, error_code: error.code }, undeclared);
    },
  };
  mountRoutes(api, routes, routeDeps);
  const metrics = createMetrics();
  const ops = opsRouter(metrics, getOpenApi, authenticator);

  // Behind a load balancer, client addresses (per-IP limits) come from X-Forwarded-For, believed
  // only from the proxies LATCHKEY_TRUST_PROXY lists (resolveClientAddress, the first middleware).
  const app = new Koa({ proxy: config.trustProxy.any });
  // Failures after the answer started (the error handler renders the rest): a client that left
  // mid-download is routine, anything else a bug; both through the log, not Koa's console output.
  const onError = (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ERR_STREAM_PREMATURE_CLOSE') log.debug({ err }, 'client left mid-answer');
    else log.error({ err }, 'failure after the answer started');
  };
  app.on('error', onError);
  // The developer portal (/portal) forwards to this same API; see server/portal/index.ts.
  const portal = createPortal({ config, db, clock, masterKey, rateLimiter, api: { router: api, routes } });
  // What every request goes through first; the runtime lane (runtime-lane.ts) takes the same steps, as the same functions.
  app.use(resolveClientAddress(config.trustProxy));
  app.use(publicHttps(config.publicBaseUrl));
  app.use(portal.acceptForwarded);
  app.use(metrics.middleware);
  app.use(requestLogging(log));
  app.use(errorHandler());
  app.use(limitUnhandledRequests(rateLimiter));
  app.use(portal.middleware);
  app.use(ops.routes());
  app.use(docsPageRouter(config.publicBaseUrl).routes());
  app.use(api.routes());
  app.use(api.allowedMethods());
  // Started by whoever runs the process (main.ts, the test server), when configured to run jobs.
  const emailJob = sendEmailJob({ db, transport: createEmailTransport(config), clock, log, masterKey });
  // Stripe's meter events when payments are configured; otherwise fees stay in the ledger, marked not_reported.
  const feeJob = reportLicenseFeeJob({ db, reporter: payments.feeReporter, clock, log });
  const jobs = createJobRunner(
    { db, queue, log, handlers: [builds.job, emailJob, feeJob] },
    { concurrency: config.jobConcurrency, perTenant: config.jobTenantConcurrency, leaseSeconds: config.jobLeaseSeconds },
  );
  // The HTTP server's handler: the runtime operations through their lane, everything else through `app`.
  const lane = createRuntimeLane({
    routes,
    deps: routeDeps,
    log,
    metrics,
    proxies: config.trustProxy,
    forwardedClient: portal.forwardedClient,
    onError: (err) => log.error({ err }, 'runtime lane failure'),
  });
  const handler = lane(app.callback());
  return { handler, routes, rateLimiter, getOpenApi, jobs, listener, quotas, storage: builds.storage, uploads: builds.uploads };
}
