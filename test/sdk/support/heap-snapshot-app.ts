/**
 * An app process for the heap test: starts the SDK from the cache (or activates with the key it is
 * given, then refreshes), calls `check()`, lets the secrets move into sodium memory, and writes a
 * heap snapshot (a full GC runs first). Prints the snapshot's path and the state as JSON.
 */
import { writeHeapSnapshot } from 'node:v8';
import path from 'node:path';
import { createLicenseClient, type LicenseClientOptions } from '../../../runtime-sdk/index.js';

const [optionsJson, licenseKey] = process.argv.slice(2) as [string, string | undefined];
const options = JSON.parse(optionsJson) as LicenseClientOptions & { cacheDir: string };
const license = await createLicenseClient({ ...options, refreshOnStart: false });
if (licenseKey) {
  await license.activate(licenseKey);
  await license.refresh();
}
let { state, memoryProtection } = await license.check();
// sodium-native loads right after the first answer (secret-memory.ts): wait for the move.
for (let waited = 0; memoryProtection !== 'sodium' && waited < 5_000; waited += 10) {
  await new Promise((resolve) => setTimeout(resolve, 10));
  ({ state, memoryProtection } = await license.check());
}
const snapshot = writeHeapSnapshot(path.join(options.cacheDir, `after-check-${process.pid}.heapsnapshot`));
process.stdout.write(`${JSON.stringify({ snapshot, state, memoryProtection })}\n`);
await license.dispose();
