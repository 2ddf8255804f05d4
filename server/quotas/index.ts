import type { Knex } from 'knex';
import { planNow } from '../accounts/plan.js';
import type { TenantQuotas } from '../config.js';
import type { Db } from '../db/knex.js';
import { RequestError, type ErrorCode } from '../errors.js';

/**
 * Per-tenant quotas (docs/contract.md, Limits: per-tenant quotas), owned here. Rate quotas count in
 * fixed windows of the database's clock (`take_tenant_quota`, migration 021): licenses minted and
 * delivery emails queued per clock hour are counted by the database itself as rows are inserted,
 * whatever the route, from the limits `applyLimits` writes at start; redemption codes per UTC day
 * are taken here in the batch's transaction. Every count is taken under the tenant's counter row
 * lock and undone with its transaction, so concurrent requests never pass a quota together. A
 * rate quota answers 429 with Retry-After (the window's end); a per-batch or storage quota, which
 * waiting does not lift, answers 403.
 */
export function createTenantQuotas(deps: { db: Db; limits: TenantQuotas }) {
  const { db, limits } = deps;
  return {
    limits,

    /** Writes the limits the database enforces by itself; run at start (main.ts, the test server). */
    async applyLimits(): Promise<void> {
      await db('tenant_quota_limits')
        .insert([
          { metric: 'licenses_per_hour', max_per_window: limits.licensesPerHour },
          { metric: 'emails_per_hour', max_per_window: limits.emailsPerHour },
        ])
        .onConflict('metric')
        .merge();
    },

    /** Takes `quantity` redemption codes of the tenant's day in `trx` (the batch's transaction). */
    async takeRedemptionCodes(trx: Knex.Transaction, developerId: string, quantity: number): Promise<void> {
      if (quantity > limits.codesPerBatch) {
        throw new RequestError('REDEMPTION_BATCH_TOO_LARGE', `A batch holds at most ${limits.codesPerBatch} codes on this server; create ${quantity} codes as several batches`);
      }
      await trx.raw('SELECT take_tenant_quota(?, ?, 86400, ?, ?)', [developerId, 'codes_per_day', quantity, limits.codesPerDay]);
    },

    /**
     * Refuses `addedBytes` more (a build upload, an upload session's declared size, a signed
     * package larger than the one it replaces) that would take the tenant's storage past its plan's
     * bytes. Counted: stored builds (artifacts and protected packages) and the declared sizes of
     * upload sessions still open, whose chunks take space before any build exists. In `trx`, under
     * a lock per tenant, so two concurrent requests are counted one after the other.
     */
    async assertStorage(trx: Knex.Transaction, developerId: string, addedBytes: number, now: Date): Promise<void> {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`tenant_storage:${developerId}`]);
      const plan = await planNow(trx, developerId, now);
      const { rows } = await trx.raw<{ rows: { used: number }[] }>(
        `SELECT (SELECT coalesce(sum(artifact_size_bytes + coalesce(protected_size_bytes, 0)), 0) FROM builds WHERE developer_id = :developerId)
              + (SELECT coalesce(sum(size_bytes), 0) FROM upload_sessions WHERE developer_id = :developerId AND expires_at > :now) AS used`,
        { developerId, now },
      );
      const used = Number(rows[0]!.used);
      const limit = limits.storageBytes[plan];
      if (used + addedBytes > limit) {
        throw new RequestError(
          'STORAGE_QUOTA_EXCEEDED',
          `Stored builds would take ${used + addedBytes} bytes, past the ${plan} plan's ${limit} bytes ` +
            `(${used} stored now or held by open upload sessions, ${addedBytes} more in this request); delete old builds or unfinished uploads${plan === 'free' ? ', or upgrade to Pro' : ''}`,
        );
      }
    },
  };
}

export type TenantQuotaService = ReturnType<typeof createTenantQuotas>;

const RATE_QUOTAS: Record<string, { code: ErrorCode; what: string; window: string }> = {
  licenses_per_hour: { code: 'LICENSE_QUOTA_EXCEEDED', what: 'licenses minted', window: 'this hour' },
  emails_per_hour: { code: 'EMAIL_QUOTA_EXCEEDED', what: 'delivery emails', window: 'this hour' },
  codes_per_day: { code: 'REDEMPTION_CODE_QUOTA_EXCEEDED', what: 'redemption codes created', window: 'today (UTC)' },
};

/** The answer to a rate quota the database refused (SQLSTATE LQ429 from `take_tenant_quota`), or undefined for any other error. */
export function quotaErrorFromDatabase(err: unknown): RequestError | undefined {
  const e = err as { code?: string; detail?: string; hint?: string };
  if (e?.code !== 'LQ429') return undefined;
  const [metric = '', max = '?', usedBefore = '?'] = (e.hint ?? '').split(' ');
  const quota = RATE_QUOTAS[metric];
  const retryAfter = /^\d+$/.test(e.detail ?? '') ? e.detail! : '60';
  const used = Number(usedBefore);
  const left = Number.isFinite(used) ? Math.max(0, Number(max) - used) : '?';
  return new RequestError(
    quota?.code ?? 'RATE_LIMITED',
    `Tenant quota reached: ${max} ${quota?.what ?? metric} ${quota?.window ?? 'in this window'} (${left} left); retry after ${retryAfter} seconds`,
    { headers: { 'Retry-After': retryAfter } },
  );
}
