import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../server/errors.js';
import { chromiumMissingFor, launchChromium } from '../support/browser.js';
import { client, type Call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

// The served OpenAPI document as third-party tools read it (the redocly lint, openapi-typescript),
// and the API reference at /docs that renders it, in headless Chromium.
const chromiumMissing = chromiumMissingFor('API reference browser test');

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'node_modules/.bin');
const run = promisify(execFile);

let server: TestServer;
let call: Call;
let document: any;
let workDir: string;
let documentFile: string;
beforeAll(async () => {
  server = await startTestServer();
  call = client(server.url);
  document = (await call('GET', '/v1/openapi.json')).body;
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-openapi-'));
  documentFile = path.join(workDir, 'openapi.json');
  fs.writeFileSync(documentFile, JSON.stringify(document, null, 2));
});
afterAll(async () => {
  await server.close();
  fs.rmSync(workDir, { recursive: true, force: true });
});

/** Every operation of the document, with where it is. */
const operations = (): { where: string; op: any }[] =>
  Object.entries<Record<string, any>>(document.paths).flatMap(([p, methods]) => Object.entries(methods).map(([method, op]) => ({ where: `${method.toUpperCase()} ${p}`, op })));

/** The object a local `$ref` (`#/components/...`) points at, or undefined. */
const resolve = (ref: string): any =>
  ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], document);

function collectRefs(node: unknown, refs: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => collectRefs(n, refs));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') refs.push(value);
      else collectRefs(value, refs);
    }
  }
  return refs;
}

/** A CLI's output whatever its exit code: both tools exit non-zero on what the test then reports. */
async function outputOf(file: string, args: string[], cwd = ROOT): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    return { ...(await run(file, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off' } })), code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: e.code ?? 1 };
  }
}

describe('the OpenAPI document', () => {
  it('passes the redocly lint of redocly.yaml: no error, and no warning but the ones it explains', async () => {
    const { stdout } = await outputOf(path.join(BIN, 'redocly'), ['lint', documentFile, '--config', path.join(ROOT, 'redocly.yaml'), '--format=json']);
    const report = JSON.parse(stdout) as { totals: { errors: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
    expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // redocly.yaml says why info-license stays a warning, and why the OAuth callback alone answers no 2XX (a 303).
    expect(new Set(report.problems.map((p) => p.ruleId))).toEqual(new Set(['info-license', 'operation-2xx-response']));
    const without2xx = report.problems.filter((p) => p.ruleId === 'operation-2xx-response').map((p) => p.location[0]?.pointer);
    expect(without2xx).toEqual(['#/paths/~1v1~1payments~1account~1callback/get/responses']);
  });

  it('gives openapi-typescript types that compile, the error body typed by its closed list', { timeout: 60_000 }, async () => {
    fs.writeFileSync(path.join(workDir, 'api.d.ts'), astToString(await openapiTS(pathToFileURL(documentFile))));
    fs.writeFileSync(
      path.join(workDir, 'uses-api.ts'),
      `import type { components, paths } from './api.js';
type ErrorBody = components['schemas']['Error'];
export const notFound: ErrorBody = { detail: 'No such app', error_code: 'APP_NOT_FOUND', status_code: 404 };
// @ts-expect-error: a code outside the closed list
export const unknownCode: ErrorBody = { detail: 'x', error_code: 'NO_SUCH_CODE', status_code: 400 };
export type Apps = paths['/v1/apps']['get']['responses'][200]['content']['application/json'];
export type AppNotFound = paths['/v1/apps/{app_id}']['get']['responses'][404]['content']['application/json'];
export const sameBody = (body: AppNotFound): ErrorBody => body;
`,
    );
    const tsc = await outputOf(
      path.join(BIN, 'tsc'),
      ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', 'uses-api.ts'],
      workDir,
    );
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
  });

  it('points every $ref at a component that exists', () => {
    const refs = collectRefs(document);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of new Set(refs)) {
      expect(ref, ref).toMatch(/^#\/components\//);
      expect(resolve(ref), ref).toBeDefined();
    }
  });

  it('answers every 4xx and 5xx with the error body, its error_code the closed list of server/errors.ts', () => {
    const body = document.components.schemas.Error;
    expect(body.required).toEqual(['detail', 'error_code', 'status_code']);
    expect(Object.keys(body.properties)).toEqual(['detail', 'error_code', 'status_code', 'reason', 'earliest_expiry', 'remaining', 'period_ends_at', 'request_id']);
    expect([...body.properties.error_code.enum].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const { where, op } of operations()) {
      const failures = Object.entries<any>(op.responses).filter(([status]) => Number(status) >= 400);
      expect(
        failures.map(([status]) => status),
        where,
      ).toEqual(expect.arrayContaining(['400', '429', '500']));
      for (const [status, ref] of failures) {
        expect(resolve(ref.$ref).content['application/json'].schema, `${where} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
      }
    }
  });

  it('gives every operation an operationId, a summary, a tag and its security', () => {
    const schemes = Object.keys(document.components.securitySchemes);
    for (const { where, op } of operations()) {
      expect(op.operationId, where).toMatch(/^\w+$/);
      expect(op.summary, where).toMatch(/\w/);
      expect(
        document.tags.map((t: { name: string }) => t.name),
        where,
      ).toEqual(expect.arrayContaining(op.tags));
      for (const requirement of op.security) expect(schemes, where).toEqual(expect.arrayContaining(Object.keys(requirement)));
      if (op.security.length) expect(Object.keys(op.responses), where).toContain('401');
    }
  });

  it('documents the RateLimit headers the server sends on every answer, and Retry-After on a 429', async () => {
    const res = await call('GET', '/v1/public/pricing');
    const sent = [...res.headers.keys()].filter((name) => name.startsWith('ratelimit-'));
    const documented = Object.keys(document.components.headers);
    expect(documented).toEqual(expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']));
    expect(sent.sort()).toEqual(
      documented
        .filter((name) => name.startsWith('RateLimit-'))
        .map((name) => name.toLowerCase())
        .sort(),
    );
    for (const { where, op } of operations()) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        const headers = Object.keys((response.$ref ? resolve(response.$ref) : response).headers ?? {});
        expect(headers, `${where} ${status}`).toEqual(expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']));
        if (status === '429') expect(headers, where).toContain('Retry-After');
      }
    }
  });

  it('says in info.description what it is and where the choices beyond the contract are explained', () => {
    expect(document.info.description).toMatch(/generated from the route definitions/);
    expect(document.info.description).toMatch(/`docs\/`/);
  });
});

describe('the API reference at /docs', () => {
  it('is public, under a strict Content-Security-Policy, and serves only its own assets', async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toMatch(/unsafe-(inline|eval)|https?:\/\/(?!127\.0\.0\.1)/);
    const html = await page.text();
    for (const asset of html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)) {
      const res = await fetch(`${server.url}${asset[1]}`);
      expect(res.status, asset[1]).toBe(200);
      expect((await fetch(`${server.url}${asset[1]}`, { headers: { 'if-none-match': res.headers.get('etag')! } })).status, asset[1]).toBe(304);
    }
    for (const outside of ['/docs/assets/package.json', '/docs/assets/..%2Fpackage.json', '/docs/assets/index.html']) {
      expect((await fetch(`${server.url}${outside}`)).status, outside).toBe(404);
    }
  });

  describe.skipIf(chromiumMissing)('in Chromium', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('renders every operation of the document and tries one out, without a CSP violation or an error', { timeout: 60_000 }, async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(15_000);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || /Content.Security.Policy/i.test(m.text())) errors.push(m.text());
      });
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto(`${server.url}/docs`);
      await page.waitForSelector('.opblock-summary-description');
      const rendered = await page.locator('.opblock-summary-description').allTextContents();
      expect(new Set(rendered)).toEqual(new Set(operations().map(({ op }) => op.summary)));
      expect(await page.locator('.info .title').textContent()).toContain(document.info.title);

      // "Try it out" calls the API from the page: connect-src allows this origin.
      const pricing = page.locator('#operations-Public-getPricing');
      await pricing.locator('.opblock-summary').click();
      await pricing.locator('.try-out__btn').click();
      await pricing.locator('.execute').click();
      await expect.poll(() => pricing.locator('.live-responses-table .response .response-col_status').textContent()).toBe('200');

      expect(errors).toEqual([]);
      await context.close();
    });
  });
});
