/**
 * A program that activates, leaves the client running (background refresh every 50 ms) and never
 * calls dispose(): it must still exit on its own, because the SDK's timers never hold the process.
 */
import { createLicenseClient } from '../../../runtime-sdk/index.js';

const [serverUrl, publicKeys, cacheDir, key] = process.argv.slice(2) as [string, string, string, string];
const license = await createLicenseClient({
  appId: 'app_test',
  serverUrl,
  publicKeys: JSON.parse(publicKeys),
  fingerprintSalt: 'salt-undisposed',
  appVersion: '1.0.0',
  cacheDir,
  refreshIntervalMs: 50,
});
const status = await license.activate(key);
await new Promise((resolve) => setTimeout(resolve, 400));
process.stdout.write(`${status.state}\n`);
