/**
 * Issue 22 item 4, the SDK's half: `license.consume()` against the real authority (Koa +
 * PostgreSQL). Online it answers the authority's balance; without the authority it queues what the
 * last known balance covers, in a sealed owner-only file, and reports it later with its original
 * idempotency keys: the authority's usage is the sum, each consumption counted exactly once, also
 * when a report is sent again because its answer was lost.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLicense } from '../support/fixtures.js';
import { licenseErrorOf } from './support/license-error.js';
import { installations, type Install } from './support/installations.js';
import { startRealAuthority } from './support/real-authority.js';
import { RecordingProxy } from './support/recording-proxy.js';

const { server, call, dev, app, publicKeys } = await startRealAuthority();
const installs = installations({ serverUrl: server.url, publicKeys });
const { start } = installs;
const install = (name: string) => installs.install(name, app);
/** Nothing listens on port 1: the authority cannot be reached. */
const UNREACHABLE = 'http://127.0.0.1:1';
const bookFileOf = (at: Install) => path.join(at.cacheDir, 'license.cache.meters');

async function serverUsed(licenseId: string, feature: string): Promise<number> {
  const res = await call('GET', `/v1/licenses/${licenseId}/usage`, { apiKey: dev.apiKey });
  expect(res.status).toBe(200);
  return res.body.meters.find((m: { feature: string }) => m.feature === feature).used;
}

async function meteredInstall(name: string, meters: Record<string, unknown>) {
  const created = await createLicense(call, dev, { app_id: app.id, meters });
  const at = install(name);
  const license = await start(at);
  expect((await license.activate(created.license_key)).state).toBe('valid');
  return { created, at, license };
}

describe('license.consume()', () => {
  it('online: answers the balance, refuses past it counting nothing, and counts a given key once', async () => {
    const { created, license } = await meteredInstall('MA1', { export: { uses_per_period: 10, period: 'month' } });
    const first = await license.consume('export', 3);
    expect(first).toMatchObject({ feature: 'export', quantity: 3, remaining: 7, usesPerPeriod: 10, queued: false });
    expect(first.periodEndsAt).toBeInstanceOf(Date);
    expect(first.idempotencyKey).toMatch(/^[0-9a-f]{32}$/);

    const keyed = await license.consume('export', 2, { idempotencyKey: 'export-job-0001' });
    expect(keyed.remaining).toBe(5);
    expect(await license.consume('export', 2, { idempotencyKey: 'export-job-0001' })).toMatchObject({ remaining: 5, queued: false });
    expect(await serverUsed(created.license_id, 'export')).toBe(5);

    const over = await licenseErrorOf(license.consume('export', 6));
    expect(over.code).toBe('USAGE_LIMIT_REACHED');
    expect(over.extra.remaining).toBe(5);
    expect(over.extra.periodEndsAt).toEqual(first.periodEndsAt);
    expect((await licenseErrorOf(license.consume('print'))).code).toBe('FEATURE_NOT_METERED');
    expect((await licenseErrorOf(license.consume('export', 0))).code).toBe('REQUEST_REJECTED');
    expect(await serverUsed(created.license_id, 'export')).toBe(5);
  });

  it('offline: queues what the known balance covers, reports it once back online, and a report sent twice counts once', async () => {
    const { created, at, license } = await meteredInstall('MB1', { export: { uses_per_period: 12, period: 'month' }, print: { uses_per_period: 5, period: 'day' } });
    expect((await license.consume('export', 4)).remaining).toBe(8);
    await license.dispose();

    const offline = await start(at, { serverUrl: UNREACHABLE });
    expect(await offline.consume('export', 2)).toMatchObject({ queued: true, remaining: 6, usesPerPeriod: 12 });
    expect(await offline.consume('export', 1)).toMatchObject({ queued: true, remaining: 5 });
    // Past the local balance: refused here, nothing queued.
    const over = await licenseErrorOf(offline.consume('export', 6));
    expect(over.code).toBe('USAGE_LIMIT_REACHED');
    expect(over.extra.remaining).toBe(5);
    // No balance known for print yet: the app cannot be told it may.
    expect((await licenseErrorOf(offline.consume('print'))).code).toBe('OFFLINE');
    await offline.dispose();
    expect(await serverUsed(created.license_id, 'export')).toBe(4);

    // The queue is sealed and owner-only, like the cache: its content is not readable.
    const book = fs.readFileSync(bookFileOf(at));
    expect(fs.statSync(bookFileOf(at)).mode & 0o777).toBe(0o600);
    expect(book.toString('utf8')).not.toContain('export');

    // A restart offline still has the queue (and its local balance).
    const again = await start(at, { serverUrl: UNREACHABLE });
    expect(await again.consume('export', 3)).toMatchObject({ queued: true, remaining: 2 });
    await again.dispose();
    const queuedBook = fs.readFileSync(bookFileOf(at));

    // Online: the refresh reports the queue, in order, each once.
    const online = await start(at);
    expect((await online.refresh()).state).toBe('valid');
    expect(await serverUsed(created.license_id, 'export')).toBe(10);
    await online.dispose();

    // The answers of that report "lost": the queue as it was before it is reported again before the
    // next consumption, and counts nothing more (counted twice, the 6 would have taken the last 2).
    fs.writeFileSync(bookFileOf(at), queuedBook);
    const replaying = await start(at);
    expect(await replaying.consume('export', 1)).toMatchObject({ queued: false, remaining: 1 });
    expect(await serverUsed(created.license_id, 'export')).toBe(11);
    // And the queue is empty now: offline, the last unit is queued once and the next refused.
    await replaying.dispose();
    const last = await start(at, { serverUrl: UNREACHABLE });
    expect(await last.consume('export', 1)).toMatchObject({ queued: true, remaining: 0 });
    expect((await licenseErrorOf(last.consume('export', 1))).code).toBe('USAGE_LIMIT_REACHED');
  });

  it('two running copies of the app on one computer, offline: neither overwrites the consumptions the other queued', async () => {
    const { created, at, license } = await meteredInstall('MC2', { export: { uses_per_period: 20, period: 'month' } });
    expect((await license.consume('export', 1)).remaining).toBe(19);
    await license.dispose();
    const first = await start(at, { serverUrl: UNREACHABLE });
    const second = await start(at, { serverUrl: UNREACHABLE });
    expect(await first.consume('export', 2)).toMatchObject({ queued: true });
    expect(await second.consume('export', 3)).toMatchObject({ queued: true });
    expect(await first.consume('export', 4)).toMatchObject({ queued: true });
    await Promise.all([first.dispose(), second.dispose()]);

    const online = await start(at);
    expect((await online.refresh()).state).toBe('valid');
    expect(await serverUsed(created.license_id, 'export')).toBe(1 + 2 + 3 + 4);
  });

  it('an answer lost on the way back: the consumption is queued with its key, and its report counts nothing more', async () => {
    const proxy = await new RecordingProxy().start();
    proxy.upstream = server.url;
    try {
      const created = await createLicense(call, dev, { app_id: app.id, meters: { export: { uses_per_period: 10, period: 'day' } } });
      const license = await start(install('MD1'), { serverUrl: proxy.url });
      expect((await license.activate(created.license_key)).state).toBe('valid');
      expect((await license.consume('export', 1)).remaining).toBe(9);

      // The authority counts it; the SDK never hears so, and keeps it to report.
      proxy.loseAnswers = true;
      const lost = await license.consume('export', 2);
      expect(lost).toMatchObject({ queued: true, remaining: 7 });
      expect(await serverUsed(created.license_id, 'export')).toBe(3);

      proxy.loseAnswers = false;
      expect((await license.refresh()).state).toBe('valid');
      const sent = proxy.requests.filter((r) => r.path === '/v1/licenses/consume').map((r) => JSON.parse(r.body) as { idempotency_key: string; quantity: number });
      // Sent twice under one key (the consumption, then its report), counted once.
      expect(sent.filter((r) => r.idempotency_key === lost.idempotencyKey)).toHaveLength(2);
      expect(await serverUsed(created.license_id, 'export')).toBe(3);
      expect(await license.consume('export', 1)).toMatchObject({ queued: false, remaining: 6 });
      expect(await serverUsed(created.license_id, 'export')).toBe(4);
    } finally {
      await proxy.close();
    }
  });

  it('a queue of another license is not reported under this one', async () => {
    const first = await meteredInstall('MC1', { export: { uses_per_period: 10, period: 'year' } });
    expect((await first.license.consume('export', 1)).remaining).toBe(9);
    await first.license.dispose();
    const offline = await start(first.at, { serverUrl: UNREACHABLE });
    expect((await offline.consume('export', 2)).queued).toBe(true);
    await offline.dispose();

    const second = await createLicense(call, dev, { app_id: app.id, meters: { export: { uses_per_period: 10, period: 'year' } } });
    const online = await start(first.at);
    expect((await online.activate(second.license_key)).state).toBe('valid');
    expect((await online.consume('export', 1)).remaining).toBe(9);
    expect(await serverUsed(second.license_id, 'export')).toBe(1);
    expect(await serverUsed(first.created.license_id, 'export')).toBe(1);
  });
  it('a feature named like an Object.prototype key is a feature like any other: offline with no balance known, it is not queued', async () => {
    const { created, at, license } = await meteredInstall('ME1', { export: { uses_per_period: 5, period: 'month' }, constructor: { uses_per_period: 2, period: 'month' } });
    expect((await license.consume('export', 1)).remaining).toBe(4);
    await license.dispose();
    const offline = await start(at, { serverUrl: UNREACHABLE });
    for (const feature of ['constructor', 'toString', 'valueOf', 'hasOwnProperty']) expect((await licenseErrorOf(offline.consume(feature))).code).toBe('OFFLINE');
    await offline.dispose();
    const online = await start(at);
    expect(await online.consume('constructor', 2)).toMatchObject({ queued: false, remaining: 0 });
    expect((await licenseErrorOf(online.consume('toString'))).code).toBe('FEATURE_NOT_METERED');
    expect(await serverUsed(created.license_id, 'constructor')).toBe(2);
    expect(await serverUsed(created.license_id, 'export')).toBe(1);
  });

  it('a consumption queued before the period turned is counted in the period it is reported in', async () => {
    const { created, at, license } = await meteredInstall('MF1', { export: { uses_per_period: 3, period: 'month' } });
    expect((await license.consume('export', 2)).remaining).toBe(1);
    await license.dispose();
    const offline = await start(at, { serverUrl: UNREACHABLE });
    expect(await offline.consume('export', 1)).toMatchObject({ queued: true, remaining: 0 });
    await offline.dispose();
    const now = new Date();
    server.clock.offsetMs = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1, 0, 1) - now.getTime();
    try {
      const online = await start(at);
      // The queued unit, reported now, and this one: 2 of the new month's 3.
      expect(await online.consume('export', 1)).toMatchObject({ queued: false, remaining: 1 });
      expect(await serverUsed(created.license_id, 'export')).toBe(2);
      await online.dispose();
    } finally {
      server.clock.offsetMs = 0;
    }
  });

  it('a queue whose device was reset meanwhile is kept, not dropped, and reported once the device is activated again', async () => {
    const { created, at, license } = await meteredInstall('MG1', { export: { uses_per_period: 10, period: 'year' } });
    expect((await license.consume('export', 1)).remaining).toBe(9);
    await license.dispose();
    const offline = await start(at, { serverUrl: UNREACHABLE });
    expect((await offline.consume('export', 3)).queued).toBe(true);
    await offline.dispose();
    expect((await call('POST', `/v1/licenses/${created.license_id}/reset-devices`, { apiKey: dev.apiKey })).status).toBe(200);

    const online = await start(at);
    expect((await licenseErrorOf(online.consume('export', 1))).code).toBe('DEVICE_DEACTIVATED');
    expect(await serverUsed(created.license_id, 'export')).toBe(1);
    expect((await online.activate(created.license_key)).state).toBe('valid');
    expect((await online.consume('export', 1)).remaining).toBe(5);
    expect(await serverUsed(created.license_id, 'export')).toBe(5);
  });

  it('a queued consumption the authority refuses as malformed (400) is kept and reported later, not dropped; consumption goes on', async () => {
    const proxy = await new RecordingProxy().start();
    proxy.upstream = server.url;
    try {
      const created = await createLicense(call, dev, { app_id: app.id, meters: { export: { uses_per_period: 10, period: 'year' } } });
      const at = install('MH1');
      const license = await start(at, { serverUrl: proxy.url });
      expect((await license.activate(created.license_key)).state).toBe('valid');
      expect((await license.consume('export', 1)).remaining).toBe(9);
      proxy.upstream = null;
      expect((await license.consume('export', 2)).queued).toBe(true);

      // An authority that does not take this SDK's report format.
      proxy.upstream = server.url;
      proxy.refuseConsume = { status: 400, body: { detail: 'body.consumed_at: not understood', error_code: 'VALIDATION_FAILED', status_code: 400 } };
      expect((await licenseErrorOf(license.consume('export', 1))).code).toBe('REQUEST_REJECTED');
      expect(await serverUsed(created.license_id, 'export')).toBe(1);

      proxy.refuseConsume = null;
      expect((await license.consume('export', 1)).remaining).toBe(6);
      expect(await serverUsed(created.license_id, 'export')).toBe(4);
    } finally {
      await proxy.close();
    }
  });
});
