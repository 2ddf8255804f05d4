import { hotQuery, type Db } from '../db/knex.js';
import { SESSION_CHANNELS } from './credential-cache.js';
import { effectivePlan, type Plan } from './plan.js';

export interface DeveloperRow {
  id: string;
  email: string;
  password_hash: string;
  company_name: string;
  /** The plan as last paid for; what it is now (grace periods end by themselves) is `effectivePlan`. */
  plan: Plan;
  two_factor_enabled: boolean;
  totp_secret_sealed: string | null;
  totp_pending_sealed: string | null;
  totp_last_step: number | null;
  /** Set while the account is deactivated (accounts/deactivation.ts). */
  deactivated_at: Date | null;
  created_at: Date;
}

export interface RefreshTokenRow {
  id: string;
  family_id: string;
  developer_id: string;
  secret_hash: string;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

/** How many second-factor codes an account may try in a window before they are locked. */
export interface TwoFactorAttemptRule {
  limit: number;
  windowMs: number;
}

export function createAccountsStore(db: Db) {
  return {
    insertDeveloper: (row: Pick<DeveloperRow, 'id' | 'email' | 'password_hash' | 'company_name'>) =>
      db('developers')
        .insert(row)
        .returning('*')
        .then((r: DeveloperRow[]) => r[0]!),

    findDeveloper: (id: string) => db<DeveloperRow>('developers').where({ id }).first(),

    /** The developer's plan now (a lapsed grace period is the free plan) and the grace period's end, if one runs. */
    planOf: (id: string, now: Date) => db('developers').where({ id }).first<{ plan: Plan; plan_grace_until: Date | null }>(effectivePlan(db, now), 'plan_grace_until'),

    findDeveloperByEmail: (email: string) => db<DeveloperRow>('developers').whereRaw('lower(email) = ?', [email.toLowerCase()]).first(),

    /**
     * An operator's decision replaces any running grace period; granting Pro also reactivates a
     * deactivated account (accounts/deactivation.ts), as a paid plan on a locked account means nothing.
     */
    setPlan: (id: string, plan: DeveloperRow['plan']) =>
      db('developers')
        .where({ id })
        .update({ plan, plan_grace_until: null, ...(plan === 'pro' && { deactivated_at: null }) })
        .returning('*')
        .then((r: DeveloperRow[]) => r[0]),

    /** Stores a not-yet-confirmed TOTP secret and its backup codes, replacing any earlier pending setup. */
    startTwoFactorSetup: (id: string, pendingSealed: string, codeHashes: string[]) =>
      db.transaction(async (trx) => {
        await trx('developers').where({ id }).update({ totp_pending_sealed: pendingSealed });
        await trx('backup_codes').where({ developer_id: id, pending: true }).delete();
        await trx('backup_codes').insert(codeHashes.map((code_hash) => ({ developer_id: id, code_hash, pending: true })));
      }),

    enableTwoFactor: async (trx: Db, id: string, secretSealed: string, step: number) => {
      await trx('developers').where({ id }).update({ two_factor_enabled: true, totp_secret_sealed: secretSealed, totp_pending_sealed: null, totp_last_step: step });
      await trx('backup_codes').where({ developer_id: id, pending: false }).delete();
      await trx('backup_codes').where({ developer_id: id, pending: true }).update({ pending: false });
    },

    disableTwoFactor: (id: string) =>
      db.transaction(async (trx) => {
        await trx('developers').where({ id }).update({ two_factor_enabled: false, totp_secret_sealed: null, totp_pending_sealed: null, totp_last_step: null });
        await trx('backup_codes').where({ developer_id: id }).delete();
      }),

    /** Records a used TOTP step; false when that step (or a later one) was already used: a replay. */
    advanceTotpStep: async (id: string, step: number, q: Db = db) =>
      (await q('developers')
        .where({ id })
        .andWhere((newer) => newer.whereNull('totp_last_step').orWhere('totp_last_step', '<', step))
        .update({ totp_last_step: step })) === 1,

    /** Spends a confirmed backup code once; false when it does not exist or was used. */
    useBackupCode: async (developerId: string, codeHash: string, q: Db = db) =>
      (await q('backup_codes').where({ developer_id: developerId, code_hash: codeHash, pending: false }).whereNull('used_at').update({ used_at: q.fn.now() })) === 1,

    /**
     * Counts one code sent with a 2FA login challenge (by its token's hash), in one statement, so
     * concurrent attempts each count; the record lasts until `expiresAt`, after the token has
     * expired anyway. The developer's expired records go with it.
     */
    countChallengeAttempt: async (tokenHash: string, developerId: string, expiresAt: Date, now: Date) =>
      (
        await hotQuery<{ attempts: number; used: boolean }>(
          db,
          `WITH expired AS (DELETE FROM login_challenges WHERE developer_id = $2 AND expires_at <= $4)
           INSERT INTO login_challenges (token_hash, developer_id, expires_at, attempts) VALUES ($1, $2, $3, 1)
           ON CONFLICT (token_hash) DO UPDATE SET attempts = login_challenges.attempts + 1
           RETURNING attempts, used_at IS NOT NULL AS used`,
          [tokenHash, developerId, expiresAt, now],
        )
      )[0]!,

    /**
     * Marks a challenge as having completed its login; false when it already had. A concurrent
     * verify of the same challenge waits on the row until `trx` ends, then finds it used (commit)
     * or free (rollback).
     */
    completeLoginChallenge: async (trx: Db, tokenHash: string, now: Date) =>
      (await trx('login_challenges').where({ token_hash: tokenHash }).whereNull('used_at').update({ used_at: now })) === 1,

    /**
     * Counts a second-factor check about to run against the account's window (a new window when
     * the last began `rule.windowMs` ago), unless second-factor checks are locked or the window
     * already holds `rule.limit`. Answers the window's start, which settles the attempt; undefined
     * when refused.
     */
    reserveTwoFactorAttempt: async (id: string, now: Date, rule: TwoFactorAttemptRule) => {
      const windowFloor = new Date(now.getTime() - rule.windowMs);
      const { rows } = await db.raw<{ rows: { since: Date }[] }>(
        `UPDATE developers SET
           two_factor_failures = CASE WHEN two_factor_failures_since > :floor THEN two_factor_failures + 1 ELSE 1 END,
           two_factor_failures_since = CASE WHEN two_factor_failures_since > :floor THEN two_factor_failures_since ELSE :now END
         WHERE id = :id
           AND (two_factor_locked_until IS NULL OR two_factor_locked_until <= :now)
           AND NOT (two_factor_failures_since > :floor AND two_factor_failures >= :limit)
         RETURNING two_factor_failures_since AS since`,
        { id, now, floor: windowFloor, limit: rule.limit },
      );
      return rows[0]?.since;
    },

    /** Takes back a reserved attempt that was no wrong code (it succeeded, or never checked one). */
    refundTwoFactorAttempt: (id: string, since: Date) =>
      db('developers').where({ id, two_factor_failures_since: since }).where('two_factor_failures', '>', 0).decrement('two_factor_failures', 1),

    /**
     * After a wrong code: when the window holds `rule.limit` attempts, locks second-factor checks
     * until `lockedUntil` and starts the count over, in one statement, so exactly one wrong code
     * locks. Answers whom to tell when this call locked.
     */
    lockTwoFactorWhenExhausted: async (trx: Db, id: string, since: Date, lockedUntil: Date, rule: TwoFactorAttemptRule) =>
      (
        await trx('developers')
          .where({ id, two_factor_failures_since: since })
          .where('two_factor_failures', '>=', rule.limit)
          .update({ two_factor_locked_until: lockedUntil, two_factor_failures: 0, two_factor_failures_since: null })
          .returning(['email', 'company_name'])
      )[0] as Pick<DeveloperRow, 'email' | 'company_name'> | undefined,

    /** When the account's lock of second-factor checks ends (null or past: not locked). */
    twoFactorLockedUntil: (id: string) =>
      db('developers')
        .where({ id })
        .first<{ two_factor_locked_until: Date | null } | undefined>('two_factor_locked_until')
        .then((r) => r?.two_factor_locked_until ?? null),

    countUnusedBackupCodes: (developerId: string) =>
      db('backup_codes')
        .where({ developer_id: developerId, pending: false })
        .whereNull('used_at')
        .count<{ count: string }[]>('* as count')
        .then((r) => Number(r[0]!.count)),

    insertRefreshToken: (row: Omit<RefreshTokenRow, 'rotated_at' | 'revoked_at'>, db_: Db = db) => db_('refresh_tokens').insert(row),

    transaction: db.transaction.bind(db),

    lockRefreshToken: (trx: Db, id: string) => trx<RefreshTokenRow>('refresh_tokens').where({ id }).forUpdate().first(),

    markRotated: (trx: Db, id: string) => trx('refresh_tokens').where({ id }).update({ rotated_at: trx.fn.now() }),

    /** The developer of a sign-in session (a refresh-token family) nothing revoked yet, else undefined. */
    liveSessionOwner: async (sessionId: string) =>
      (
        await hotQuery<{ developer_id: string }>(
          db,
          'SELECT developer_id FROM refresh_tokens WHERE family_id = $1 AND revoked_at IS NULL LIMIT 1',
          [sessionId],
          'accounts.live_session',
        )
      )[0]?.developer_id,

    /**
     * Ends sign-in sessions in `q`: the one named by `where.session`, or every session of
     * `where.developer` except `where.except` (refresh tokens revoked, portal sessions deleted).
     * Every server process is told of the ended sessions when `q` commits (their caches drop them);
     * answers their ids.
     */
    endSessions: async (q: Db, where: { session: string } | { developer: string; except?: string }): Promise<string[]> => {
      const matching = (table: 'refresh_tokens' | 'portal_sessions', column: 'family_id' | 'session_id') => {
        const query = q(table);
        if ('session' in where) return query.where(column, where.session);
        const { except } = where;
        query.where('developer_id', where.developer);
        if (except) query.where((other) => other.whereNull(column).orWhereNot(column, except));
        return query;
      };
      await matching('portal_sessions', 'session_id').delete();
      const revoked: { family_id: string }[] = await matching('refresh_tokens', 'family_id').whereNull('revoked_at').update({ revoked_at: q.fn.now() }).returning('family_id');
      const sessions = [...new Set(revoked.map((r) => r.family_id))];
      for (const id of sessions) await q.raw('SELECT pg_notify(?, ?)', [SESSION_CHANNELS.revoked, id]);
      return sessions;
    },

    /** A new password; a lock of second-factor checks ends with it (whoever caused it knew the old one). */
    setPassword: (q: Db, id: string, passwordHash: string) =>
      q('developers').where({ id }).update({ password_hash: passwordHash, two_factor_locked_until: null, two_factor_failures: 0, two_factor_failures_since: null }),
  };
}

export type AccountsStore = ReturnType<typeof createAccountsStore>;
