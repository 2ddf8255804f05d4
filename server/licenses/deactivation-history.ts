import type { Knex } from 'knex';
import type { Page } from '../http/pagination.js';

/**
 * Who took a device off a license: the app itself (`POST /v1/licenses/deactivate`, counted against
 * its app's quota), the developer's reset, the store's reset through the entitlement companion
 * (`store_reset`), or the store revoking the license (`revoked`, its devices deactivated). Only the
 * app's count against the app quota.
 */
export const DEACTIVATION_SOURCES = ['app', 'developer', 'store_reset', 'revoked'] as const;
export type DeactivationSource = (typeof DEACTIVATION_SOURCES)[number];

/** The window the app's deactivation quota counts in: 30 days, like the entitlement companion's reset rule. */
export const DEACTIVATION_WINDOW_MS = 30 * 86_400_000;

export interface DeactivationRow {
  fingerprint_hash: string;
  source: DeactivationSource;
  deactivated_at: Date;
}

/** One history row per device taken off the license, in the transaction that took it off. */
export async function recordDeactivations(q: Knex, licenseId: string, fingerprints: string[], source: DeactivationSource, now: Date): Promise<void> {
  if (fingerprints.length === 0) return;
  await q('device_deactivations').insert(fingerprints.map((fingerprint_hash) => ({ license_id: licenseId, fingerprint_hash, source, deactivated_at: now })));
}

/**
 * Takes every device off a license the caller has locked (a reset, a revocation), each recorded in
 * its history as `source`'s; a floating license's seats go with its devices (their next heartbeat
 * finds them not activated). Answers how many devices there were.
 */
export async function removeAllDevices(trx: Knex.Transaction, licenseId: string, source: Exclude<DeactivationSource, 'app'>, now: Date): Promise<number> {
  await trx('licenses').where({ id: licenseId }).update({ device_count: 0 });
  await trx('license_leases').where({ license_id: licenseId }).delete();
  const removed: { fingerprint_hash: string }[] = await trx('devices').where({ license_id: licenseId }).delete().returning('fingerprint_hash');
  await recordDeactivations(
    trx,
    licenseId,
    removed.map((d) => d.fingerprint_hash),
    source,
    now,
  );
  return removed.length;
}

/** The app's own deactivations of the license since `since`, oldest first: what its quota counts. */
export const appDeactivationsSince = (q: Knex, licenseId: string, since: Date): Promise<Date[]> =>
  q('device_deactivations').where({ license_id: licenseId, source: 'app' }).where('deactivated_at', '>', since).orderBy('deactivated_at').pluck('deactivated_at');

/** A page of the license's history, newest first, with the total through a window function. */
export async function listDeactivations(q: Knex, licenseId: string, page: Page): Promise<{ rows: DeactivationRow[]; total: number }> {
  const rows: (DeactivationRow & { total: number })[] = await q('device_deactivations')
    .where({ license_id: licenseId })
    .select('fingerprint_hash', 'source', 'deactivated_at', q.raw('count(*) OVER () AS total'))
    .orderBy([
      { column: 'deactivated_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(page.limit)
    .offset(page.offset);
  if (rows.length > 0) return { rows, total: rows[0]!.total };
  const counted = await q('device_deactivations').where({ license_id: licenseId }).count<{ count: string }[]>('* as count');
  return { rows, total: Number(counted[0]!.count) };
}
