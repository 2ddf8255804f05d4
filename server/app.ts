import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { accountRoutes, adminRoutes } from './accounts/routes.js';
import { createAccountsService } from './accounts/service.js';
import { createAccountsStore } from './accounts/store.js';
import { activationRoutes } from './activations/routes.js';
import { createActivationsService } from './activations/service.js';
import { createActivationsStore } from './activations/store.js';
import { appRoutes } from './apps/routes.js';
import { createAppsService } from './apps/service.js';
import { createAppsStore } from './apps/store.js';
import { createBuilds } from './builds/index.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { MasterKey } from './crypto/master-key.js';
import type { Db } from './db/knex.js';
import { createAuthenticator } from './http/auth.js';
import { errorHandler } from './http/error-handler.js';
import { requestLogging } from './http/logging.js';
import { createMetrics } from './http/metrics.js';
import { buildOpenApi } from './http/openapi.js';
import { createRateLimiter, limitUnhandledRequests } from './http/rate-limit.js';
import { mountRoutes, type RouteDef } from './http/route.js';
import { createJobQueue } from './jobs/queue.js';
import { createJobRunner } from './jobs/runner.js';
import { licenseRoutes } from './licenses/routes.js';
import { createLicensesService } from './licenses/service.js';
import { createLicensesStore } from './licenses/store.js';
import { opsRouter } from './ops/routes.js';
import type { Keyring } from './signing/keyring.js';
import { signingRoutes } from './signing/routes.js';

export interface AppDeps {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  masterKey: MasterKey;
  /** Signs runtime tokens; its public keys are served at /v1/public/keys. */
  keyring: Keyring;
}

export const API_VERSION = '1.0.0';

/** Builds the Koa application; no listening here, so tests and `main.ts` share it. */
export function createApp(deps: AppDeps) {
  const { config, db, clock, log, masterKey, keyring } = deps;
  const accounts = createAccountsService({ store: createAccountsStore(db), clock, masterKey });
  const rateLimiter = createRateLimiter(db, clock, config.rateLimitMultiplier);
  const licenses = createLicensesService({ store: createLicensesStore(db), clock });
  const queue = createJobQueue();
  const builds = createBuilds({ config, db, clock, log, masterKey, keyring, queue });
  const apps = createAppsService({ store: createAppsStore(db), removeStoredFiles: builds.service.removeAppFiles });
  const activations = createActivationsService({
    store: createActivationsStore(db),
    clock,
    keyring,
    rateLimiter,
    buildExists: builds.service.exists,
  });
  const authenticator = createAuthenticator(
    { accessToken: accounts.verifyAccessToken, apiKey: accounts.verifyApiKey, isApiKey: accounts.isApiKey },
    config.adminToken,
  );

  const routes: RouteDef[] = [
    ...accountRoutes(accounts),
    ...adminRoutes(accounts),
    ...appRoutes(apps),
    ...builds.routes,
    ...licenseRoutes(licenses),
    ...activationRoutes(activations),
    ...signingRoutes(keyring),
  ];
  let openApi: unknown;
  const getOpenApi = () => (openApi ??= buildOpenApi(routes, { version: API_VERSION, serverUrl: config.publicBaseUrl }));

  const api = new Router();
  mountRoutes(api, routes, { authenticator, rateLimiter, maxJsonBytes: config.maxJsonBytes });
  const metrics = createMetrics();
  const ops = opsRouter(db, metrics, getOpenApi);

  // Behind a load balancer, client addresses (per-IP limits) come from X-Forwarded-For.
  const app = new Koa({ proxy: config.trustProxy });
  app.use(metrics.middleware);
  app.use(requestLogging(log));
  app.use(errorHandler());
  app.use(limitUnhandledRequests(rateLimiter));
  app.use(ops.routes());
  app.use(api.routes());
  app.use(api.allowedMethods());
  // Started by whoever runs the process (main.ts, the test server), when configured to run jobs.
  const jobs = createJobRunner({ db, queue, log, handlers: [builds.job] }, { concurrency: config.jobConcurrency });
  return { app, routes, rateLimiter, getOpenApi, jobs, storage: builds.storage };
}
