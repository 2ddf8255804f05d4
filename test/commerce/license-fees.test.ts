import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFeeLedger, LICENSE_FEE_CENTS, type LicenseFeeRequest } from '../../server/billing/fees.js';
import { reportLicenseFeeJob } from '../../server/billing/report-fee-job.js';
import type { FeeUsageReporter, LicenseFeeUsage } from '../../server/billing/usage-reporter.js';
import { createJobQueue } from '../../server/jobs/queue.js';
import { createJobRunner } from '../../server/jobs/runner.js';
import { createLicense } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from '../licensing/world.js';
import { eventually } from '../support/wait.js';

async function soldLicense(t: Tenant, body: Record<string, unknown> = {}): Promise<LicenseFeeRequest> {
  const license = await createLicense(t.call, t.dev, { app_id: t.app.id, ...body });
  return {
    licenseId: license.license_id,
    appId: t.app.id,
    developerId: t.dev.id,
    source: String(license.source),
    licenseType: license.license_type as LicenseFeeRequest['licenseType'],
  };
}

describe('the fee ledger', () => {
  let server: TestServer;
  let t: Tenant;
  const queue = createJobQueue();

  beforeAll(async () => {
    // No job runner: the report jobs stay in the table to be counted, and this file runs them.
    server = await startTestServer({ env: { LATCHKEY_RUN_JOBS: 'false' } });
    t = await tenant(server);
  });
  afterAll(() => server.close());

  const ledger = () => createFeeLedger({ queue, clock: server.clock });
  const record = (request: LicenseFeeRequest) => server.database.db.transaction((trx) => ledger().recordLicenseFee(trx, request));
  const feeRows = (licenseId: string) => server.database.db('license_fees').where({ license_id: licenseId });
  const reportJobs = (licenseId: string) => server.database.db('jobs').where({ kind: 'report_license_fee' }).whereRaw(`payload->>'license_id' = ?`, [licenseId]);

  it('charges 4 USD exactly once when ten transactions record the same license at once', async () => {
    const sale = await soldLicense(t);
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => record(sale)));
    expect(outcomes.filter((o) => o === 'charged')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'already_charged')).toHaveLength(9);
    expect(await feeRows(sale.licenseId)).toEqual([
      {
        license_id: sale.licenseId,
        developer_id: t.dev.id,
        app_id: t.app.id,
        amount_cents: 400,
        currency: 'usd',
        source: 'api',
        charged_at: expect.any(Date),
        report_status: 'pending',
        report_idempotency_key: `license_fee:${sale.licenseId}`,
        report_detail: null,
        reported_at: null,
        collected_by: 'usage_report',
      },
    ]);
    expect(LICENSE_FEE_CENTS).toBe(400);
    expect(await reportJobs(sale.licenseId)).toHaveLength(1);
    expect(await record(sale)).toBe('already_charged');
  });

  it('charges nothing when the sale rolls back, so the retried sale charges', async () => {
    const sale = await soldLicense(t);
    const failedSale = server.database.db.transaction(async (trx) => {
      await ledger().recordLicenseFee(trx, sale);
      throw new Error('the sale failed after the fee');
    });
    await expect(failedSale).rejects.toThrow('the sale failed');
    expect(await feeRows(sale.licenseId)).toEqual([]);
    expect(await reportJobs(sale.licenseId)).toEqual([]);
    expect(await record(sale)).toBe('charged');
  });

  it.each([
    ['a trial license', { license_type: 'trial' }, {}],
    ['a test license', {}, { test: true }],
  ])('never charges %s', async (_name, body, extra) => {
    const sale = { ...(await soldLicense(t, body)), ...extra };
    expect(await record(sale)).toBe('exempt');
    expect(await feeRows(sale.licenseId)).toEqual([]);
    expect(await reportJobs(sale.licenseId)).toEqual([]);
  });

  it('keeps the fee when the app and its licenses are deleted', async () => {
    const other = await tenant(server);
    const sale = await soldLicense(other);
    await record(sale);
    const res = await other.call('DELETE', `/v1/apps/${other.app.id}`, { token: other.dev.accessToken });
    expect(res.status).toBeLessThan(300);
    expect(await server.database.db('licenses').where({ id: sale.licenseId })).toEqual([]);
    expect(await feeRows(sale.licenseId)).toHaveLength(1);
  });

  it('reports the fee to the processor under one idempotency key, retried until it is accepted', async () => {
    const sale = await soldLicense(t);
    await record(sale);
    const calls: LicenseFeeUsage[] = [];
    const flakyProcessor: FeeUsageReporter = {
      async reportLicenseFee(usage) {
        calls.push(usage);
        // Down for each license's first attempt.
        if (calls.filter((c) => c.licenseId === usage.licenseId).length === 1) throw new Error('processor unavailable');
        return { status: 'reported' };
      },
    };
    const db = server.database.db;
    const log = pino({ level: 'silent' });
    const runner = createJobRunner(
      { db, queue, log, handlers: [reportLicenseFeeJob({ db, reporter: flakyProcessor, clock: server.clock, log })] },
      { concurrency: 2, pollMs: 100 },
    );
    runner.start();
    try {
      // Only this license's report: the earlier tests' pending reports go to a processor too.
      await eventually('the first report attempt to fail', async () => (await reportJobs(sale.licenseId).whereNotNull('last_error')).length > 0);
      await reportJobs(sale.licenseId).update({ run_after: db.fn.now() });
      const [row] = await eventually('the fee to be reported', async () => {
        const rows = await feeRows(sale.licenseId).where({ report_status: 'reported' });
        return rows.length > 0 && rows;
      });
      expect(row.reported_at).toBeInstanceOf(Date);
    } finally {
      await runner.stop();
    }
    const mine = calls.filter((c) => c.licenseId === sale.licenseId);
    expect(mine).toHaveLength(2);
    expect(new Set(mine.map((c) => JSON.stringify(c)))).toEqual(
      new Set([
        JSON.stringify({
          licenseId: sale.licenseId,
          developerId: t.dev.id,
          amountCents: 400,
          currency: 'usd',
          idempotencyKey: `license_fee:${sale.licenseId}`,
          billingCustomerId: null,
        }),
      ]),
    );
    expect(await reportJobs(sale.licenseId)).toEqual([]);
  });

  it("reports the developer's pending fees with the first job to run, its own first, and stops at a processor failure", async () => {
    const seller = await tenant(server);
    const [a, b, c] = [await soldLicense(seller), await soldLicense(seller), await soldLicense(seller)];
    for (const sale of [a, b, c]) expect(await record(sale)).toBe('charged');
    const db = server.database.db;
    // A's job is an hour away, so B's runs first: it sends B, then the developer's oldest, A, then C.
    await reportJobs(a.licenseId).update({ run_after: db.raw(`now() + interval '1 hour'`) });
    const sent: string[] = [];
    const processor: FeeUsageReporter = {
      async reportLicenseFee(usage) {
        sent.push(usage.licenseId);
        // Down for C's first attempt: B's batch stops there; C's own job sends it again.
        if (usage.licenseId === c.licenseId && sent.filter((id) => id === c.licenseId).length === 1) throw new Error('processor unavailable');
        return { status: 'reported' };
      },
    };
    const log = pino({ level: 'silent' });
    const runner = createJobRunner({ db, queue, log, handlers: [reportLicenseFeeJob({ db, reporter: processor, clock: server.clock, log })] }, { concurrency: 2, pollMs: 100 });
    runner.start();
    try {
      await eventually('every fee to be reported', async () => (await feeRows(c.licenseId).where({ report_status: 'reported' })).length > 0);
    } finally {
      await runner.stop();
    }
    const mine = new Set([a, b, c].map((sale) => sale.licenseId));
    expect(sent.filter((id) => mine.has(id))).toEqual([b.licenseId, a.licenseId, c.licenseId, c.licenseId]);
    for (const sale of [a, b, c]) {
      expect(await feeRows(sale.licenseId).first()).toMatchObject({ report_status: 'reported', reported_at: expect.any(Date) });
      // A's job was still an hour away: the batch that reported A removed it.
      expect(await reportJobs(sale.licenseId)).toEqual([]);
    }
  });
});

describe('the fee report without a payment processor', () => {
  let server: TestServer;
  let t: Tenant;

  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
  });
  afterAll(() => server.close());

  it('keeps the fee in the ledger and says it was not reported, instead of pretending', async () => {
    const sale = await soldLicense(t);
    const ledger = createFeeLedger({ queue: createJobQueue(), clock: server.clock });
    expect(await server.database.db.transaction((trx) => ledger.recordLicenseFee(trx, sale))).toBe('charged');
    const [row] = await eventually('the report to settle', async () => {
      const rows = await server.database.db('license_fees').where({ license_id: sale.licenseId }).whereNot({ report_status: 'pending' });
      return rows.length > 0 && rows;
    });
    expect(row).toMatchObject({ report_status: 'not_reported', report_detail: expect.stringContaining('no payment processor'), reported_at: null });
  });
});
