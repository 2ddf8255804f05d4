import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { requestBody } from '../support/http.js';

/** Fills in the portal's sign-in form at `baseUrl` and submits it (what follows depends on the account: 2FA asks for a code). */
export async function submitSignIn(page: Page, baseUrl: string, dev: { email: string; password: string }) {
  await page.goto(`${baseUrl}/portal`);
  await page.fill('#signin-email', dev.email);
  await page.fill('#signin-password', dev.password);
  await page.click('#signin-submit');
}

export interface PortalAnswer<T = any> {
  status: number;
  body: T;
  headers: Headers;
  setCookies: string[];
}

/**
 * A browser as the portal sees it, over plain fetch: a cookie jar, the CSRF token of the current
 * session, and an Origin header (a browser sends its page's origin with every state change).
 */
export class PortalClient {
  readonly cookies = new Map<string, string>();
  csrf = '';

  constructor(
    readonly baseUrl: string,
    readonly origin: string | null = baseUrl,
  ) {}

  async send<T = any>(
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; csrf?: string | null; raw?: { data: Uint8Array<ArrayBuffer>; contentType: string } } = {},
  ): Promise<PortalAnswer<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const csrf = opts.csrf === undefined ? this.csrf : opts.csrf;
    if (csrf) headers['x-csrf-token'] = csrf;
    if (this.origin && method !== 'GET' && !('origin' in headers)) headers.origin = this.origin;
    const body = requestBody(opts, headers);
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (!value || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    const parsed = text && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
    return { status: res.status, body: parsed as T, headers: res.headers, setCookies };
  }

  /** GET /portal/session: the CSRF token for what follows. */
  async refresh(): Promise<PortalAnswer> {
    const res = await this.send('GET', '/portal/session');
    expect(res.status).toBe(200);
    this.csrf = res.body.csrf_token;
    return res;
  }

  async signIn(email: string, password: string): Promise<PortalAnswer> {
    await this.refresh();
    const res = await this.send('POST', '/portal/session/login', { body: { email, password } });
    if (res.body?.csrf_token) this.csrf = res.body.csrf_token;
    return res;
  }

  /** The API through the portal's proxy. */
  api<T = any>(method: string, apiPath: string, opts: Parameters<PortalClient['send']>[2] = {}) {
    return this.send<T>(method, `/portal/api${apiPath}`, opts);
  }
}

/** The attributes of one Set-Cookie line, lower-cased names. */
export function cookieAttributes(line: string): { name: string; value: string; attrs: Map<string, string> } {
  const [pair, ...rest] = line.split(';');
  const eq = pair!.indexOf('=');
  const attrs = new Map<string, string>();
  for (const part of rest) {
    const [k, ...v] = part.trim().split('=');
    attrs.set(k!.toLowerCase(), v.join('='));
  }
  return { name: pair!.slice(0, eq).trim(), value: pair!.slice(eq + 1).trim(), attrs };
}

/** A fresh browser profile on the portal at `origin`; console errors (a CSP refusal, an exception) are collected. */
export async function openPortalPage(browser: Browser, origin: string) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  // A step that fails says which, well inside the test's own timeout.
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    // A refused API call (a 404 "none yet", a 409 shown to the user) is logged by Chromium as a failed resource: expected.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  page.on('pageerror', (err) => errors.push(err.message));
  return { page, context, errors, close: () => context.close() };
}

export interface DrawnChart {
  /** The canvas's accessible name. */
  label: string;
  /** The rows of the chart's numbers table, cell by cell. */
  rows: string[][];
}

/**
 * The chart `id` as the page shows it at its current width: drawn (a canvas that is an image with a
 * name, a size, and no wider than the figure it is in), with its numbers table.
 */
export async function drawnChart(page: Page, id: string): Promise<DrawnChart> {
  await page.waitForSelector(`#${id} canvas[role="img"]`);
  // A chart takes a new width in the frame after its container changed: two frames on, it has.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  const chart = await page.evaluate((chartId) => {
    const canvas = document.querySelector(`#${chartId} canvas`)!;
    const figure = canvas.closest('figure')!;
    return {
      label: canvas.getAttribute('aria-label') ?? '',
      width: canvas.getBoundingClientRect().width,
      height: canvas.getBoundingClientRect().height,
      figureWidth: figure.getBoundingClientRect().width,
      rows: [...figure.querySelectorAll('table.chart-data tbody tr')].map((tr) => [...(tr as HTMLTableRowElement).cells].map((cell) => cell.textContent ?? '')),
    };
  }, id);
  expect(chart.width, `${id} width`).toBeGreaterThan(0);
  expect(chart.height, `${id} height`).toBeGreaterThan(0);
  expect(chart.width, `${id} fits its figure`).toBeLessThanOrEqual(chart.figureWidth);
  expect(chart.label, `${id} name`).not.toBe('');
  return { label: chart.label, rows: chart.rows };
}
