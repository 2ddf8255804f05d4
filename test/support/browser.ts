import fs, { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';

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

/**
 * One Chromium for the test file, launched before its tests and closed after them (neither when
 * `missing`: its browser tests are skipped). Answers the browser, for use inside tests.
 */
export function chromiumForFile(missing: boolean): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (!missing) browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => browser!;
}

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

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** Where the page tests leave a screenshot of each page at each width for a reviewer (git-ignored; CI keeps them as artifacts). */
export const SCREENSHOTS = path.resolve('test/portal/screenshots');
/** A phone's width and a laptop's: every page is checked and photographed at both. */
export const WIDTHS = [390, 1280] as const;
/** The narrowest and widest layouts: checked for overflow only. */
export const EDGE_WIDTHS = [360, 1440] as const;

/**
 * axe-core's serious and critical violations on the page as it is now. Its source is evaluated over
 * the DevTools protocol: `page.addScriptTag` adds an inline script, which the pages' own
 * Content-Security-Policy refuses (as it should), and the tests keep that policy on.
 */
export async function axeViolations(page: Page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (context: Document) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    return (await axe.run(document)).violations;
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
}

/** At `width`, nothing is wider than the viewport (the page never scrolls sideways). */
export async function expectFits(page: Page, name: string, width: number) {
  await page.setViewportSize({ width, height: 800 });
  const fit = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
  expect(fit.scrollWidth, `${name} overflows at ${width}px`).toBeLessThanOrEqual(fit.clientWidth);
}

/**
 * The checks every page passes at both widths (and fits at 360 px and 1440 px too): nothing wider than the viewport, no serious or
 * critical axe violation; a full-page screenshot of each width as `<name>-<width>.png` in SCREENSHOTS.
 */
export async function inspectPage(page: Page, name: string) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  for (const width of EDGE_WIDTHS) await expectFits(page, name, width);
  for (const width of WIDTHS) {
    await expectFits(page, name, width);
    expect(await axeViolations(page), `${name} at ${width}px`).toEqual([]);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
  }
}
