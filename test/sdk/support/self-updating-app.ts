/**
 * The body of a small app that updates itself for real: v1 and v2 are one-line `app.mjs` files in a
 * temporary install folder that call `runVersion`. It activates against the test's authority,
 * starts the updater (answering Install now), and writes what it saw to the result file; v1 never
 * gets there, because the updater replaces it and starts v2 with the same arguments.
 */
import fs from 'node:fs';
import { createLicenseClient } from '../../../runtime-sdk/index.js';
import { createUpdater } from '../../../runtime-sdk/updates/index.js';

export interface SelfUpdateConfig {
  serverUrl: string;
  appId: string;
  publicKeys: { keys: object[] };
  key: string;
  dataDir: string;
  resultFile: string;
}

export async function runVersion(version: string, buildId: string): Promise<void> {
  const config = JSON.parse(process.env.LATCHKEY_SELF_UPDATE ?? '{}') as SelfUpdateConfig;
  const args = process.argv.slice(2);
  process.stdout.write(`${version} running with ${JSON.stringify(args)}\n`);
  const license = await createLicenseClient({
    appId: config.appId,
    serverUrl: config.serverUrl,
    publicKeys: config.publicKeys as never,
    fingerprintSalt: 'salt-self-update',
    appVersion: version,
    buildId,
    cacheDir: config.dataDir,
    refreshOnStart: false,
    memoryProtection: 'masked',
    retryLimit: 0,
  });
  if (!(await license.check()).usable) await license.activate(config.key);
  const updater = createUpdater({ license, appName: 'Notes', prompt: { ask: async () => 'install' }, retryBaseDelayMs: 10 });
  const started = await updater.start();
  const outcome = await updater.checkInBackground();
  fs.writeFileSync(config.resultFile, JSON.stringify({ version, args, cwd: process.cwd(), started, outcome: outcome.status }));
  updater.dispose();
  await license.dispose();
}
