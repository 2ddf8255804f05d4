import path from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { Db } from '../db/knex.js';
import type { JobQueue } from '../jobs/queue.js';
import type { Keyring } from '../signing/keyring.js';
import { createFilesystemStorage } from '../storage/filesystem.js';
import { createS3Storage } from '../storage/s3.js';
import { createScratchSpace } from '../storage/scratch.js';
import type { TenantQuotaService } from '../quotas/index.js';
import type { PushGuards } from '../updates/rules.js';
import { createDownloadLinks } from './download-link.js';
import { createProcessor } from './processing.js';
import { protectBuildJob } from './protect-job.js';
import { buildRoutes } from './routes.js';
import { clamdScanner } from './scanning/clamd.js';
import { eicarScanner } from './scanning/eicar.js';
import { createBuildsService } from './service.js';
import { createBuildsStore } from './store.js';
import { uploadSessionRoutes } from './upload-routes.js';
import { createUploadSessions } from './upload-sessions.js';

/** The builds domain assembled: its service, routes, job, storage (the data directory's, or a bucket's) and signed download links. */
export function createBuilds(deps: {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  masterKey: MasterKey;
  keyring: Keyring;
  queue: JobQueue;
  pushGuards: PushGuards;
  quotas: TenantQuotaService;
}) {
  const { config, db, clock, log, queue } = deps;
  const storage = config.storage.kind === 's3' ? createS3Storage(config.storage) : createFilesystemStorage(path.join(config.dataDir, 'storage'));
  const store = createBuildsStore(db);
  const scanners = [eicarScanner, ...(config.clamd ? [clamdScanner(config.clamd)] : [])];
  const links = createDownloadLinks(deps.masterKey, clock, config.publicBaseUrl);
  const scratch = createScratchSpace(config.dataDir);
  const service = createBuildsService({ db, store, storage, queue, clock, scanners, scratch, links, pushGuards: deps.pushGuards, quotas: deps.quotas });
  const job = protectBuildJob({
    store,
    storage,
    scratch,
    clock,
    log,
    masterKey: deps.masterKey,
    keyring: deps.keyring,
    processor: createProcessor({ scanners, nodeRuntimes: config.nodeRuntimes }),
    authority: { serverUrl: config.publicBaseUrl, publicKeys: deps.keyring.jwks },
  });
  const uploads = createUploadSessions({ db, storage, clock, log, builds: service, quotas: deps.quotas, maxArtifactBytes: config.maxArtifactBytes });
  const routes = [...buildRoutes(service, { storage, maxArtifactBytes: config.maxArtifactBytes }), ...uploadSessionRoutes(uploads)];
  return { service, storage, job, links, uploads, routes };
}
