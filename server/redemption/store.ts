import type { Knex } from 'knex';
import { FEE_EXEMPT_LICENSE_TYPES, licenseFee } from '../billing/fee-rule.js';
import { chargeFeeCtes } from '../billing/store.js';
import { effectivePlanSqlAt } from '../accounts/plan.js';
import { hotQuery, type Db } from '../db/knex.js';
import { mintLicenseSql } from '../licenses/mint.js';
import { newestDeliverableBuildsJsonSql, type DeliverableBuildJson } from '../delivery/deliverable-builds.js';
import { channelApp } from '../delivery/store.js';
import { emailRecord, queueEmailCtes, type NewOutboxEmail } from '../email/store.js';
import type { Meters } from '../licenses/meters/schemas.js';
import type { LicenseType, SeatModel } from '../licenses/rules.js';
import type { CodeStatus } from './schemas.js';

export interface BatchRow {
  id: string;
  developer_id: string;
  app_id: string;
  channel: string;
  label: string;
  quantity: number;
  /** Node-locked: the devices of each license; floating: its seats (max_concurrent). */
  device_limit: number;
  seat_model: SeatModel;
  lease_ttl_minutes: number | null;
  license_expiry_days: number;
  license_type: LicenseType;
  features: Record<string, unknown>;
  /** Of each license; null: the app's sold meters when the code is redeemed. */
  meters: Meters | null;
  codes_expire_at: Date | null;
  created_at: Date;
}

export interface BatchCounts {
  available: number;
  redeemed: number;
  revoked: number;
  expired: number;
}

/** What redeeming a code needs to know first when it sends the delivery email: the code's status now and its app, with its platforms and newest deliverable builds. */
export interface RedeemableCode {
  status: CodeStatus;
  sellable: boolean;
  developer_id: string;
  app_id: string;
  app_name: string;
  platforms: string[];
  builds: DeliverableBuildJson[];
}

/**
 * What REDEEM_SQL answers: no row for a code that does not exist; otherwise the code's status as the
 * statement began and, when this statement claimed it, the license's app with its platforms and newest
 * deliverable builds (server/delivery/deliverable-builds.ts), read by the same statement.
 */
export interface RedeemOutcome {
  status: CodeStatus;
  /** False when the code is not a trial and its seller has no active Pro subscription: nothing was claimed. */
  sellable: boolean;
  claimed: boolean;
  app_id: string | null;
  app_name: string | null;
  /** The app's developer's company name, for the hosted page. */
  seller_name: string | null;
  platforms: string[] | null;
  /** The app's newest deliverable builds, when asked for (`readBuilds`). */
  builds: DeliverableBuildJson[] | null;
  email_queued: boolean;
}

/** A redemption as REDEEM_SQL performs it: the new license's id and key, and the delivery email when one goes out. */
export interface RedeemRequest {
  codeHash: string;
  now: Date;
  email: string | null;
  licenseId: string;
  licenseKey: string;
  /** The delivery email's outbox row (its license is `licenseId`), or null. */
  deliveryEmail: NewOutboxEmail | null;
  /** Whether the statement reads the app's builds: not when the caller read them already (with an address). */
  readBuilds: boolean;
}

/**
 * A code's status now: only transitions are stored; an Available code past its batch's expiry is
 * Expired. `now` is the SQL of the current time (knex's `?`, or a prepared statement's parameter).
 */
const codeStatusSqlAt = (now: string) => `CASE WHEN c.status = 'available' AND b.codes_expire_at <= ${now} THEN 'expired' ELSE c.status END`;
const CODE_STATUS_SQL = codeStatusSqlAt('?');
const codeStatusIs = (status: CodeStatus) => `(${CODE_STATUS_SQL}) = '${status}'`;

/** The code's status with the current time as `$2`, for the prepared statements below. */
const STATUS_AT_$2 = codeStatusSqlAt('$2::timestamptz');

/**
 * Whether the code's seller may sell it now (batch `b`, its developer joined as `developers`): docs/contract.md's
 * plan rules make paid sales need an active Pro subscription; a code of a fee-exempt (trial) type is
 * no sale. `exemptTypes` is the parameter holding those types; `$2` is the current time.
 */
const sellableAt$2 = (exemptTypes: string) => `(b.license_type = ANY (${exemptTypes}::text[]) OR (${effectivePlanSqlAt('$2::timestamptz')}) = 'pro')`;

/**
 * Redemption in one statement, so one round trip (and no transaction around it) whatever the
 * outcome. $1 code hash, $2 now, $3 the redeemer's address or null, $4/$5 the new license's id and
 * key, $6 its fee (billing's record, completed here with the batch's tenant, app and channel), $7
 * the fee-exempt license types, $8 the delivery email's outbox row (jsonb) or null, $9 whether to read the
 * app's builds (`builds`; null otherwise). The license,
 * the fee and the email (with their jobs) are written by their owners' text (licenses/mint.ts,
 * billing/store.ts, email/store.ts). The code is claimed by one conditional UPDATE: of two
 * concurrent redemptions the second waits on the row lock, re-checks the condition on the committed row and claims nothing. With the claim,
 * the batch's license (expiring `license_expiry_days` after now, in exact days), its fee once
 * (never for an exempt type) with its report job, and the email with its send job are inserted; the
 * code's license_id is checked against the new license at the end of the statement (deferred).
 * `status` is read from the statement's snapshot: a code claimed but reported 'available' was
 * changed by a concurrent transaction meanwhile (the caller reads it again).
 */
const REDEEM_SQL = `
  WITH code AS (
    SELECT (${STATUS_AT_$2}) AS status, ${sellableAt$2('$7')} AS sellable
    FROM redemption_codes c JOIN redemption_batches b ON b.id = c.batch_id JOIN developers ON developers.id = b.developer_id
    WHERE c.code_hash = $1
  ), claimed AS (
    UPDATE redemption_codes c SET status = 'redeemed', redeemed_at = $2, redeemed_email = $3, license_id = $4
    FROM redemption_batches b JOIN apps a ON a.id = b.app_id JOIN developers ON developers.id = b.developer_id
    WHERE b.id = c.batch_id AND c.code_hash = $1 AND (${STATUS_AT_$2}) = 'available' AND ${sellableAt$2('$7')}
    RETURNING b.developer_id, b.app_id, a.name AS app_name, a.delivery_mode, a.platforms, b.channel, b.device_limit, b.seat_model, b.lease_ttl_minutes, b.license_expiry_days, b.license_type, b.features, b.meters
  ), license AS (${mintLicenseSql({
    record: `to_jsonb(claimed) || jsonb_build_object('id', $4::text, 'license_key', $5::text, 'email', $3::text, 'source', claimed.channel,
      'expires_at', CASE WHEN claimed.license_expiry_days > 0 THEN $2::timestamptz + make_interval(secs => claimed.license_expiry_days * 86400) END)`,
    from: 'claimed',
  })}), ${chargeFeeCtes({
    record: `$6::jsonb || jsonb_build_object('developer_id', claimed.developer_id, 'app_id', claimed.app_id, 'source', claimed.channel)`,
    from: 'claimed',
    where: 'claimed.license_type <> ALL ($7::text[])',
  })}, ${queueEmailCtes({ record: '$8::jsonb', from: 'claimed' })}
  SELECT code.status, code.sellable, claimed.app_id IS NOT NULL AS claimed, claimed.app_id, claimed.app_name,
    (SELECT company_name FROM developers WHERE developers.id = claimed.developer_id) AS seller_name, claimed.platforms,
    CASE WHEN claimed.app_id IS NOT NULL AND $9::boolean THEN ${newestDeliverableBuildsJsonSql('claimed.app_id', 'claimed.delivery_mode')} END AS builds,
    EXISTS (SELECT 1 FROM email) AS email_queued
  FROM code
  LEFT JOIN claimed ON true`;

/** A code's status now, whether its seller may sell it, and its app with its builds; $1 code hash, $2 now, $3 fee-exempt types. */
const REDEEMABLE_SQL = `
  SELECT (${STATUS_AT_$2}) AS status, ${sellableAt$2('$3')} AS sellable, b.developer_id, b.app_id, a.name AS app_name, a.platforms,
    ${newestDeliverableBuildsJsonSql('a.id', 'a.delivery_mode')} AS builds
  FROM redemption_codes c JOIN redemption_batches b ON b.id = c.batch_id JOIN apps a ON a.id = b.app_id
  JOIN developers ON developers.id = b.developer_id
  WHERE c.code_hash = $1`;

export function createRedemptionStore(db: Db) {
  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),

    app: (developerId: string, appId: string, now: Date) => channelApp(db, developerId, appId, now),

    insertBatch: (trx: Knex.Transaction, row: BatchRow) =>
      trx('redemption_batches').insert({ ...row, features: JSON.stringify(row.features), meters: row.meters && JSON.stringify(row.meters) }),

    /** Inserts the codes' hashes; answers those inserted (a hash already taken, about never, is left out). */
    insertCodes: (trx: Knex.Transaction, batch: { id: string; developer_id: string }, hashes: string[]) =>
      trx
        .raw(
          `INSERT INTO redemption_codes (code_hash, batch_id, developer_id)
           SELECT unnest(?::text[]), ?, ?
           ON CONFLICT (code_hash) DO NOTHING
           RETURNING code_hash`,
          [hashes, batch.id, batch.developer_id],
        )
        .then((r: { rows: { code_hash: string }[] }) => r.rows.map((row) => row.code_hash)),

    /** The app's batches, oldest first, with their codes counted by status now; one round trip. */
    async listBatches(developerId: string, appId: string, page: { limit: number; offset: number }, now: Date) {
      const count = (status: CodeStatus) => db.raw(`count(*) FILTER (WHERE ${codeStatusIs(status)})::int AS ${status}`, [now]);
      const rows: (BatchRow & BatchCounts & { total: number })[] = await db('redemption_batches as b')
        .leftJoin('redemption_codes as c', 'c.batch_id', 'b.id')
        .where({ 'b.developer_id': developerId, 'b.app_id': appId })
        .groupBy('b.id')
        .select('b.*', count('available'), count('redeemed'), count('revoked'), count('expired'), db.raw('count(*) OVER ()::int AS total'))
        .orderBy([{ column: 'b.created_at' }, { column: 'b.id' }])
        .limit(page.limit)
        .offset(page.offset);
      return { rows, total: rows[0]?.total ?? 0 };
    },

    /** Marks the developer's code revoked if it is Available now; undefined otherwise. */
    revokeCode: (developerId: string, codeHash: string, now: Date) =>
      db
        .raw(
          `UPDATE redemption_codes c SET status = 'revoked', revoked_at = ?
           FROM redemption_batches b
           WHERE b.id = c.batch_id AND c.code_hash = ? AND c.developer_id = ? AND ${codeStatusIs('available')}
           RETURNING c.batch_id, c.revoked_at`,
          [now, codeHash, developerId, now],
        )
        .then((r: { rows: { batch_id: string; revoked_at: Date }[] }) => r.rows[0]),

    /** A code's status now and its batch; scoped to the developer when one is given. */
    codeState: (codeHash: string, now: Date, scope: { developerId?: string; trx?: Knex.Transaction } = {}) => {
      const q = scope.trx ?? db;
      const developerId = scope.developerId;
      const query = q('redemption_codes as c').join('redemption_batches as b', 'b.id', 'c.batch_id').where('c.code_hash', codeHash);
      if (developerId) query.where('c.developer_id', developerId);
      return query.first<{ status: CodeStatus; batch_id: string; revoked_at: Date | null } | undefined>(
        q.raw(`(${CODE_STATUS_SQL}) AS status`, [now]),
        'c.batch_id',
        'c.revoked_at',
      );
    },

    batchExists: (developerId: string, batchId: string) => db('redemption_batches').where({ id: batchId, developer_id: developerId }).first('id').then(Boolean),

    /** Revokes every code of the batch that is Available now; answers how many. */
    revokeAvailable: (developerId: string, batchId: string, now: Date) =>
      db
        .raw(
          `UPDATE redemption_codes c SET status = 'revoked', revoked_at = ?
           FROM redemption_batches b
           WHERE b.id = c.batch_id AND c.batch_id = ? AND c.developer_id = ? AND ${codeStatusIs('available')}`,
          [now, batchId, developerId, now],
        )
        .then((r: { rowCount: number | null }) => r.rowCount ?? 0),

    /** Redeems the code in one statement (REDEEM_SQL); undefined for a code that does not exist. */
    redeem: async (r: RedeemRequest) =>
      (
        await hotQuery<RedeemOutcome>(
          db,
          REDEEM_SQL,
          [
            r.codeHash,
            r.now,
            r.email,
            r.licenseId,
            r.licenseKey,
            // A redeemed code's fee is reported as a usage event; whether one is due depends on the batch's type ($7).
            JSON.stringify({ ...licenseFee(r.licenseId), charged_at: r.now }),
            FEE_EXEMPT_LICENSE_TYPES,
            emailRecord(r.deliveryEmail),
            r.readBuilds,
          ],
          'redemption.redeem',
        )
      )[0],

    /** The code's status now and its app (REDEEMABLE_SQL); undefined for a code that does not exist. */
    redeemable: async (codeHash: string, now: Date) => (await hotQuery<RedeemableCode>(db, REDEEMABLE_SQL, [codeHash, now, FEE_EXEMPT_LICENSE_TYPES], 'redemption.redeemable'))[0],
  };
}

export type RedemptionStore = ReturnType<typeof createRedemptionStore>;
