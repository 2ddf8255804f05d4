import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

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

/** A browser and a context that may use the clipboard at `origin` (the pages' copy buttons). */
export async function chromiumWithClipboard(origin: string): Promise<{ browser: Browser; context: BrowserContext }> {
  const browser = await launchChromium();
  const context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  return { browser, context };
}

/** A new page of `context` recording its console errors and uncaught exceptions (a Content-Security-Policy refusal shows there). */
export async function openPageRecordingErrors(context: BrowserContext): Promise<{ page: Page; consoleErrors: string[] }> {
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (err) => consoleErrors.push(err.message));
  return { page, consoleErrors };
}
