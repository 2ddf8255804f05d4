import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, which the hosted-page tests drive (`.ci/run` installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/** True when Chromium is missing: the file's browser tests are then skipped, with a warning naming `what`. */
export function chromiumMissingFor(what: string): boolean {
  const missing = !existsSync(CHROMIUM);
  if (missing) console.warn(`${what} skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);
  return missing;
}

/** Headless, without the sandbox (CI runs as root, which Chromium's sandbox refuses). */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
