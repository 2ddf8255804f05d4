import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import type { ApiResponse } from '../support/http.js';
import { serverWithTenant, tenant } from './world.js';

const { server, t } = await serverWithTenant();
afterEach(() => {
  server.clock.offsetMs = 0;
});

let keys = 0;
const newKey = () => `key-${process.pid}-${Date.now()}-${++keys}`;

/** A license with `meters`, activated on a new device: its runtime token. */
async function metered(meters: Record<string, unknown>) {
  const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, meters });
  const res = await t.call('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: randomFingerprint(), build_id: null } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { lic, token: res.body.token as string };
}

const consume = (body: Record<string, unknown>) => t.call('POST', '/v1/licenses/consume', { body });
const usage = (licenseId: string, apiKey = t.dev.apiKey) => t.call('GET', `/v1/licenses/${licenseId}/usage`, { apiKey });
const usedOf = async (licenseId: string, feature: string): Promise<number> => {
  const res = await usage(licenseId);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.meters.find((m: { feature: string }) => m.feature === feature).used;
};

function expectLimitExceeded(res: ApiResponse, remaining: number, periodEndsAt: string | null): void {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(Object.keys(res.body).sort()).toEqual(['detail', 'error_code', 'period_ends_at', 'remaining', 'request_id', 'status_code']);
  expect(res.body).toMatchObject({ error_code: 'USAGE_LIMIT_EXCEEDED', status_code: 409, remaining, period_ends_at: periodEndsAt });
}

/**
 * Sessions of the test database waiting on a lock now, asked through `session`, which may be inside
 * a transaction: pg_stat_activity is otherwise read once per transaction and repeated after.
 */
async function sessionsWaitingOnLocks(session: pg.Client): Promise<number> {
  await session.query('SELECT pg_stat_clear_snapshot()');
  return Number((await session.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0].n);
}

/** The first instant of next month, UTC, from the server's clock now. */
function nextMonthStart(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

describe('metered features: settings', () => {
  it('are set at creation, read on the license, replaced with PUT, and shown with usage', async () => {
    const { lic } = await metered({ export: { uses_per_period: 100, period: 'month' } });
    expect(lic.meters).toEqual({ export: { uses_per_period: 100, period: 'month' } });
    expect((await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey })).body.meters).toEqual(lic.meters);

    const set = await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, {
      apiKey: t.dev.apiKey,
      body: { meters: { export: { uses_per_period: 5, period: 'day' }, seats_report: { uses_per_period: 1, period: 'lifetime' } } },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const now = new Date();
    const dayStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    expect(set.body).toEqual({
      license_id: lic.license_id,
      meters: [
        {
          feature: 'export',
          uses_per_period: 5,
          period: 'day',
          used: 0,
          remaining: 5,
          period_starts_at: dayStart.toISOString(),
          period_ends_at: new Date(dayStart.getTime() + 86_400_000).toISOString(),
        },
        { feature: 'seats_report', uses_per_period: 1, period: 'lifetime', used: 0, remaining: 1, period_starts_at: '1970-01-01T00:00:00.000Z', period_ends_at: null },
      ],
    });
    expect((await usage(lic.license_id)).body).toEqual(set.body);
    expect((await t.call('GET', `/v1/licenses/${lic.license_id}`, { apiKey: t.dev.apiKey })).body.meters).toMatchObject({ export: { uses_per_period: 5, period: 'day' } });
  });

  it('refuses bad meters with 400 and changes nothing; another developer gets 404', async () => {
    const { lic } = await metered({ export: { uses_per_period: 3, period: 'month' } });
    const bad = [
      { meters: { export: { uses_per_period: 0, period: 'month' } } },
      { meters: { export: { uses_per_period: 3, period: 'week' } } },
      { meters: { export: { uses_per_period: 3 } } },
      { meters: { 'has space': { uses_per_period: 3, period: 'day' } } },
      { meters: { export: { uses_per_period: 3, period: 'day', extra: 1 } } },
      { meters: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`f${i}`, { uses_per_period: 1, period: 'day' }])) },
      {},
    ];
    for (const body of bad) expectError(await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: t.dev.apiKey, body }), 400, 'VALIDATION_FAILED');
    // A key named __proto__ (kept by JSON.parse, dropped by every spread and schema): refused, not read as no meters at all.
    const proto = { raw: { data: '{"meters": {"__proto__": {"uses_per_period": 3, "period": "day"}}}', contentType: 'application/json' } };
    const refused = await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: t.dev.apiKey, ...proto });
    expectError(refused, 400, 'VALIDATION_FAILED');
    expect(refused.body.detail).toBe('body.meters.__proto__: is not an allowed name');
    expectError(
      await t.call('POST', '/v1/licenses', { apiKey: t.dev.apiKey, body: { app_id: t.app.id, meters: { export: { uses_per_period: -1, period: 'day' } } } }),
      400,
      'VALIDATION_FAILED',
    );
    expect((await usage(lic.license_id)).body.meters).toMatchObject([{ feature: 'export', uses_per_period: 3, period: 'month' }]);

    const other = await tenant(server);
    expectError(await usage(lic.license_id, other.dev.apiKey), 404, 'LICENSE_NOT_FOUND');
    const put = await other.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: other.dev.apiKey, body: { meters: {} } });
    expectError(put, 404, 'LICENSE_NOT_FOUND');
    expect((await usage(lic.license_id)).body.meters).toHaveLength(1);
  });
});

describe('metered features: consumption', () => {
  it('counts, answers the balance, and refuses past the limit with the balance, counting nothing', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 10, period: 'month' } });
    const periodEnd = nextMonthStart().toISOString();
    const first = await consume({ token, feature: 'export', quantity: 4, idempotency_key: newKey() });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toEqual({
      license_id: lic.license_id,
      feature: 'export',
      quantity: 4,
      used: 4,
      remaining: 6,
      uses_per_period: 10,
      period_ends_at: periodEnd,
      replayed: false,
    });
    expect((await consume({ token, feature: 'export', idempotency_key: newKey() })).body).toMatchObject({ quantity: 1, used: 5, remaining: 5 });
    expectLimitExceeded(await consume({ token, feature: 'export', quantity: 6, idempotency_key: newKey() }), 5, periodEnd);
    expect(await usedOf(lic.license_id, 'export')).toBe(5);
    expect((await consume({ token, feature: 'export', quantity: 5, idempotency_key: newKey() })).body).toMatchObject({ used: 10, remaining: 0 });
    expectLimitExceeded(await consume({ token, feature: 'export', idempotency_key: newKey() }), 0, periodEnd);
    expect(await usedOf(lic.license_id, 'export')).toBe(10);
  });

  it('a double-submitted idempotency key counts once and answers the first answer, even after the balance ran out', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 3, period: 'day' } });
    const key = newKey();
    const first = await consume({ token, feature: 'export', quantity: 2, idempotency_key: key });
    expect(first.body).toMatchObject({ used: 2, remaining: 1, replayed: false });
    const again = await consume({ token, feature: 'export', quantity: 2, idempotency_key: key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, replayed: true });
    expect((await consume({ token, feature: 'export', quantity: 1, idempotency_key: newKey() })).body).toMatchObject({ used: 3, remaining: 0 });
    expect((await consume({ token, feature: 'export', quantity: 2, idempotency_key: key })).body).toEqual({ ...first.body, replayed: true });
    expect(await usedOf(lic.license_id, 'export')).toBe(3);

    // The key spent on another consumption is refused, not counted.
    expectError(await consume({ token, feature: 'export', quantity: 1, idempotency_key: key }), 409, 'IDEMPOTENCY_KEY_REUSED');
    expect(await usedOf(lic.license_id, 'export')).toBe(3);
  });

  it('a burst of concurrent consumptions never passes the limit: 30 of 1 against 10 count exactly 10', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 10, period: 'month' } });
    const answers = await Promise.all(Array.from({ length: 30 }, () => consume({ token, feature: 'export', idempotency_key: newKey() })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(20);
    expect(
      answers
        .filter((a) => a.status === 200)
        .map((a) => a.body.used)
        .sort((a, b) => a - b),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await usedOf(lic.license_id, 'export')).toBe(10);
  });

  it('the same key sent concurrently counts once: every twin answers the one balance', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 100, period: 'month' } });
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 12 }, () => consume({ token, feature: 'export', quantity: 7, idempotency_key: key })));
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    expect(new Set(answers.map((a) => a.body.used))).toEqual(new Set([7]));
    expect(answers.filter((a) => !a.body.replayed)).toHaveLength(1);
    expect(await usedOf(lic.license_id, 'export')).toBe(7);
  });

  it('one key sent for two features while the first is still counting: the second answers IDEMPOTENCY_KEY_REUSED, not its own limit', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 10, period: 'month' }, print: { uses_per_period: 1, period: 'month' } });
    expect((await consume({ token, feature: 'export', idempotency_key: newKey() })).status).toBe(200);
    expect((await consume({ token, feature: 'print', idempotency_key: newKey() })).status).toBe(200);
    const key = newKey();
    // Another session holds the export counter's row: the first consumption of the key waits on it, uncommitted.
    const holder = new pg.Client({ connectionString: server.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM meter_usage WHERE license_id = $1 AND feature = $2 FOR UPDATE', [lic.license_id, 'export']);
      const waiting = () => sessionsWaitingOnLocks(holder);
      const first = consume({ token, feature: 'export', quantity: 2, idempotency_key: key });
      for (let i = 0; i < 200 && (await waiting()) < 1; i++) await new Promise((r) => setTimeout(r, 25));
      let answered = false;
      const twin = consume({ token, feature: 'print', idempotency_key: key }).finally(() => (answered = true));
      for (let i = 0; i < 200 && !answered && (await waiting()) < 2; i++) await new Promise((r) => setTimeout(r, 25));
      await holder.query('COMMIT');
      expect((await first).body).toMatchObject({ feature: 'export', used: 3, replayed: false });
      expectError(await twin, 409, 'IDEMPOTENCY_KEY_REUSED');
    } finally {
      await holder.end();
    }
    expect(await usedOf(lic.license_id, 'export')).toBe(3);
    expect(await usedOf(lic.license_id, 'print')).toBe(1);
  });

  it('counts a late report in the period it arrives in: consumed_at never chooses the period', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 2, period: 'month' } });
    expect((await consume({ token, feature: 'export', quantity: 2, idempotency_key: newKey() })).status).toBe(200);
    const nextMonth = nextMonthStart();
    server.clock.offsetMs = nextMonth.getTime() + 60_000 - Date.now();
    // Consumed offline last month, reported this month: this month's balance pays for it.
    const lateReport = await consume({ token, feature: 'export', idempotency_key: newKey(), consumed_at: new Date(nextMonth.getTime() - 60_000).toISOString() });
    expect(lateReport.status, JSON.stringify(lateReport.body)).toBe(200);
    expect(lateReport.body).toMatchObject({ used: 1, remaining: 1, period_ends_at: nextMonthStart(nextMonth).toISOString() });
    expect(await usedOf(lic.license_id, 'export')).toBe(1);
  });

  it('backdated consumptions cannot spend past periods: 30 reports dated one day further back each count in today', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 2, period: 'day' } });
    const statuses: number[] = [];
    for (let daysBack = 1; daysBack <= 30; daysBack++) {
      const consumedAt = new Date(Date.now() - daysBack * 86_400_000).toISOString();
      statuses.push((await consume({ token, feature: 'export', quantity: 2, idempotency_key: newKey(), consumed_at: consumedAt })).status);
    }
    expect(statuses[0]).toBe(200);
    expect(statuses.slice(1)).toEqual(Array(29).fill(409));
    expect(await usedOf(lic.license_id, 'export')).toBe(2);
  });

  it('accepts a consumption dated long ago (a long offline stay), before the license existed, and counts it now', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 5, period: 'year' } });
    for (const consumedAt of [new Date(Date.now() - 400 * 86_400_000), new Date('2001-01-01T00:00:00Z')]) {
      const res = await consume({ token, feature: 'export', idempotency_key: newKey(), consumed_at: consumedAt.toISOString() });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    expect(await usedOf(lic.license_id, 'export')).toBe(2);
  });

  it('refuses the token of a device no longer on record (reset) with 403 DEVICE_NOT_ACTIVATED, counting nothing', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 5, period: 'year' } });
    expect((await consume({ token, feature: 'export', idempotency_key: newKey() })).status).toBe(200);
    expect((await t.call('POST', `/v1/licenses/${lic.license_id}/reset-devices`, { apiKey: t.dev.apiKey })).status).toBe(200);
    expectError(await consume({ token, feature: 'export', idempotency_key: newKey() }), 403, 'DEVICE_NOT_ACTIVATED');
    // A token for a device of another license: its device is not on this one.
    const other = await metered({ export: { uses_per_period: 5, period: 'year' } });
    expect((await consume({ token: other.token, feature: 'export', idempotency_key: newKey() })).status).toBe(200);
    expect(await usedOf(lic.license_id, 'export')).toBe(1);
  });

  it('a reset running when a consumption arrives: the consumption waits for it, then is refused 403 DEVICE_NOT_ACTIVATED, counting nothing', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 5, period: 'year' } });
    // Another session resets the license's devices as a reset does: the license row locked first, then its devices removed.
    const reset = new pg.Client({ connectionString: server.database.url });
    await reset.connect();
    try {
      await reset.query('BEGIN');
      await reset.query('SELECT 1 FROM licenses WHERE id = $1 FOR UPDATE', [lic.license_id]);
      let answered = false;
      const consumption = consume({ token, feature: 'export', idempotency_key: newKey() }).finally(() => (answered = true));
      for (let i = 0; i < 200 && !answered && (await sessionsWaitingOnLocks(reset)) < 1; i++) await new Promise((r) => setTimeout(r, 25));
      // Had the consumption taken the device's record first, this delete and the consumption would deadlock.
      expect((await reset.query('DELETE FROM devices WHERE license_id = $1', [lic.license_id])).rowCount).toBe(1);
      await reset.query('COMMIT');
      expectError(await consumption, 403, 'DEVICE_NOT_ACTIVATED');
    } finally {
      await reset.end();
    }
    expect(await usedOf(lic.license_id, 'export')).toBe(0);
  });

  it('accepts the token of a fingerprint another installation of the machine renamed (the record it stands for)', async () => {
    const lic = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1, meters: { export: { uses_per_period: 5, period: 'year' } } });
    const machine = { 'os.machine_id': randomFingerprint(), 'system.uuid': randomFingerprint(), 'board.serial': randomFingerprint(), 'disk.serial': randomFingerprint() };
    const activate = (components: Record<string, string>) =>
      t.call('POST', '/v1/licenses/activate', { body: { license_key: lic.license_key, device_fingerprint: randomFingerprint(), fingerprint_components: components } });
    const first = await activate(machine);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const renaming = await activate({ ...machine, 'disk.serial': randomFingerprint() });
    expect(renaming.status, JSON.stringify(renaming.body)).toBe(200);
    for (const token of [first.body.token, renaming.body.token]) {
      const res = await consume({ token, feature: 'export', idempotency_key: newKey() });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    expect(await usedOf(lic.license_id, 'export')).toBe(2);
  });

  it('feature names that are Object.prototype keys are features like any other: 404 without a meter, counted with one', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 5, period: 'year' } });
    const names = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];
    for (const feature of names) expectError(await consume({ token, feature, idempotency_key: newKey() }), 404, 'METER_NOT_FOUND');
    const meters = Object.fromEntries(names.map((n) => [n, { uses_per_period: 1, period: 'day' }]));
    const set = await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: t.dev.apiKey, body: { meters } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.meters.map((m: { feature: string }) => m.feature)).toEqual([...names].sort());
    for (const feature of names) {
      const res = await consume({ token, feature, idempotency_key: newKey() });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ feature, used: 1, remaining: 0 });
    }
    expect(await usedOf(lic.license_id, 'constructor')).toBe(1);
  });

  it('refuses bad input, unknown features and bad tokens with 4xx, counting nothing', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 5, period: 'year' } });
    const good = { token, feature: 'export', quantity: 1, idempotency_key: newKey() };
    for (const body of [
      { ...good, quantity: 0 },
      { ...good, quantity: 1.5 },
      { ...good, quantity: -2 },
      { ...good, idempotency_key: 'short' },
      { ...good, idempotency_key: 'has spaces in it' },
      { ...good, feature: '' },
      { ...good, consumed_at: 'yesterday' },
      { ...good, consumed_at: new Date(Date.now() + 3_600_000).toISOString() },
      { feature: 'export', idempotency_key: newKey() },
    ]) {
      expectError(await consume(body), 400, 'VALIDATION_FAILED');
    }
    expectError(await consume({ ...good, feature: 'print' }), 404, 'METER_NOT_FOUND');
    expectError(await consume({ ...good, token: `${token.slice(0, -4)}AAAA` }), 401, 'INVALID_RUNTIME_TOKEN');
    expect(await usedOf(lic.license_id, 'export')).toBe(0);

    await t.call('POST', `/v1/licenses/${lic.license_id}/revoke`, { apiKey: t.dev.apiKey });
    expectError(await consume(good), 401, 'INVALID_LICENSE_KEY');
    expect(await usedOf(lic.license_id, 'export')).toBe(0);
  });

  it("a meter's period changed between two that start at the same instant (a month and its 1st day) counts from 0", async () => {
    // Noon on the 1st of next month: that month and that day start at the same instant.
    server.clock.offsetMs = nextMonthStart().getTime() + 12 * 3_600_000 - Date.now();
    const { lic, token } = await metered({ export: { uses_per_period: 10, period: 'month' } });
    expect((await consume({ token, feature: 'export', quantity: 10, idempotency_key: newKey() })).status).toBe(200);
    const set = await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: t.dev.apiKey, body: { meters: { export: { uses_per_period: 10, period: 'day' } } } });
    expect(set.body.meters).toMatchObject([{ feature: 'export', used: 0, remaining: 10 }]);
    expect((await consume({ token, feature: 'export', quantity: 10, idempotency_key: newKey() })).body).toMatchObject({ used: 10, remaining: 0 });
    // Back to the month: its own count, still spent.
    await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: t.dev.apiKey, body: { meters: { export: { uses_per_period: 10, period: 'month' } } } });
    expect(await usedOf(lic.license_id, 'export')).toBe(10);
  });

  it('a lowered limit leaves usage counted: remaining 0, further consumption refused', async () => {
    const { lic, token } = await metered({ export: { uses_per_period: 10, period: 'lifetime' } });
    expect((await consume({ token, feature: 'export', quantity: 6, idempotency_key: newKey() })).status).toBe(200);
    const set = await t.call('PUT', `/v1/licenses/${lic.license_id}/meters`, { apiKey: t.dev.apiKey, body: { meters: { export: { uses_per_period: 4, period: 'lifetime' } } } });
    expect(set.body.meters).toMatchObject([{ feature: 'export', used: 6, remaining: 0, period_ends_at: null }]);
    expectLimitExceeded(await consume({ token, feature: 'export', idempotency_key: newKey() }), 0, null);
  });
});
