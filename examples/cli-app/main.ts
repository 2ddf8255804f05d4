/**
 * A command-line app that runs only with a license: it asks for the key the first time, then starts
 * from the cached license (offline too, for the grace period) and stops when the license is gone.
 *
 *   npx tsx examples/cli-app/main.ts
 */
import { createInterface } from 'node:readline';
import { createLicenseClient, LicenseError, statusMessage, type LicenseClient, type LicenseStatus } from '@latchkey/runtime-sdk';
import { APP_VERSION, licenseConfig } from './config.js';

const MAX_KEY_ATTEMPTS = 3;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Tries the license server first (a revocation lifted, grace renewed), then asks for a key. */
async function unlock(license: LicenseClient, status: LicenseStatus): Promise<LicenseStatus> {
  if (status.state !== 'unlicensed') {
    status = await license.refresh().catch(() => status);
    if (status.usable) return status;
  }
  say(statusMessage(status));
  // Iterating lines (rather than question()) also works when the key is piped in.
  const prompt = createInterface({ input: process.stdin });
  const lines = prompt[Symbol.asyncIterator]();
  try {
    for (let attempt = 1; attempt <= MAX_KEY_ATTEMPTS; attempt++) {
      process.stdout.write('License key: ');
      const line = await lines.next();
      if (line.done || !line.value.trim()) break;
      try {
        return await license.activate(line.value);
      } catch (err) {
        if (!(err instanceof LicenseError)) throw err;
        say(err.userMessage);
      }
    }
  } finally {
    prompt.close();
  }
  return status;
}

function runApp(status: LicenseStatus): void {
  const offline = status.state === 'grace' ? ` (offline until ${status.graceEndsAt?.toISOString()})` : '';
  say(`Notes Pro ${APP_VERSION} is licensed${offline}. Features: ${JSON.stringify(status.features)}`);
}

// A command-line run is over before a background refresh would answer: the start asks the server
// itself, for 1.5 s at most, so a revocation or renewal takes effect on this run; offline or slow,
// the run goes on from the cache. Nothing the SDK left in flight holds the exit.
const license = await createLicenseClient({ ...licenseConfig(), appVersion: APP_VERSION, logger: console, revalidate: { blockingMs: 1_500 } });
try {
  let status = await license.check();
  if (!status.usable) status = await unlock(license, status);
  if (status.usable) {
    runApp(status);
  } else {
    process.exitCode = 2;
  }
} finally {
  await license.dispose();
}
