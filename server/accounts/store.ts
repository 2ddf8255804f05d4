import { hotQuery, type Db } from '../db/knex.js';
import { countHitCte } from '../http/rate-limit.js';

export interface DeveloperRow {
  id: string;
  email: string;
  password_hash: string;
  company_name: string;
  plan: 'free' | 'pro';
  two_factor_enabled: boolean;
  totp_secret_sealed: string | null;
  totp_pending_sealed: string | null;
  totp_last_step: number | null;
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

export function createAccountsStore(db: Db) {
  return {
    insertDeveloper: (row: Pick<DeveloperRow, 'id' | 'email' | 'password_hash' | 'company_name'>) =>
      db('developers').insert(row).returning('*').then((r: DeveloperRow[]) => r[0]!),

    findDeveloper: (id: string) => db<DeveloperRow>('developers').where({ id }).first(),

    findDeveloperByEmail: (email: string) =>
      db<DeveloperRow>('developers').whereRaw('lower(email) = ?', [email.toLowerCase()]).first(),

    setPlan: (id: string, plan: DeveloperRow['plan']) =>
      db('developers').where({ id }).update({ plan }).returning('*').then((r: DeveloperRow[]) => r[0]),

    /** Stores a not-yet-confirmed TOTP secret and its backup codes, replacing any earlier pending setup. */
    startTwoFactorSetup: (id: string, pendingSealed: string, codeHashes: string[]) =>
      db.transaction(async (trx) => {
        await trx('developers').where({ id }).update({ totp_pending_sealed: pendingSealed });
        await trx('backup_codes').where({ developer_id: id, pending: true }).delete();
        await trx('backup_codes').insert(codeHashes.map((code_hash) => ({ developer_id: id, code_hash, pending: true })));
      }),

    enableTwoFactor: (id: string, secretSealed: string, step: number) =>
      db.transaction(async (trx) => {
        await trx('developers')
          .where({ id })
          .update({ two_factor_enabled: true, totp_secret_sealed: secretSealed, totp_pending_sealed: null, totp_last_step: step });
        await trx('backup_codes').where({ developer_id: id, pending: false }).delete();
        await trx('backup_codes').where({ developer_id: id, pending: true }).update({ pending: false });
      }),

    disableTwoFactor: (id: string) =>
      db.transaction(async (trx) => {
        await trx('developers')
          .where({ id })
          .update({ two_factor_enabled: false, totp_secret_sealed: null, totp_pending_sealed: null, totp_last_step: null });
        await trx('backup_codes').where({ developer_id: id }).delete();
      }),

    /** Records a used TOTP step; false when that step (or a later one) was already used: a replay. */
    advanceTotpStep: async (id: string, step: number) =>
      (await db('developers')
        .where({ id })
        .andWhere((q) => q.whereNull('totp_last_step').orWhere('totp_last_step', '<', step))
        .update({ totp_last_step: step })) === 1,

    /** Spends a confirmed backup code once; false when it does not exist or was used. */
    useBackupCode: async (developerId: string, codeHash: string) =>
      (await db('backup_codes')
        .where({ developer_id: developerId, code_hash: codeHash, pending: false })
        .whereNull('used_at')
        .update({ used_at: db.fn.now() })) === 1,

    countUnusedBackupCodes: (developerId: string) =>
      db('backup_codes')
        .where({ developer_id: developerId, pending: false })
        .whereNull('used_at')
        .count<{ count: string }[]>('* as count')
        .then((r) => Number(r[0]!.count)),

    /** Revokes the active key and stores the new one, atomically: exactly one key works afterwards. */
    rotateApiKey: (developerId: string, keyId: string, secretHash: string) =>
      db.transaction(async (trx) => {
        // Concurrent rotations queue on the developer row; otherwise each would revoke only the key
        // it saw and both inserts would collide on the one-active-key index.
        await trx('developers').where({ id: developerId }).forUpdate().first('id');
        await trx('api_keys').where({ developer_id: developerId }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
        await trx('api_keys').insert({ id: keyId, developer_id: developerId, secret_hash: secretHash });
      }),

    /**
     * The active key's owner and secret hash and, in the same statement, one request counted in the
     * owner's rate-limit bucket (`bucketPrefix` + developer id) when the hash matches: every API-key
     * request costs one round trip for both. `hits` is null when nothing was counted. Comparing the
     * hash in SQL (not in constant time) only decides the counting and reveals nothing usable: it is
     * the SHA-256 of a 256-bit secret; the service still decides validity with `safeEqual`.
     */
    findActiveApiKeyCountingHit: async (keyId: string, secretHash: string, hit: { bucketPrefix: string; windowStart: Date }) => {
      const rows = await hotQuery<{ developer_id: string; secret_hash: string; hits: number | null }>(
        db,
        `WITH api_key AS (
           SELECT developer_id, secret_hash FROM api_keys WHERE id = $1 AND revoked_at IS NULL
         ), hit AS (
           ${countHitCte({ bucket: '$2 || developer_id', windowStart: '$3', from: 'api_key WHERE secret_hash = $4' })}
         )
         SELECT developer_id, secret_hash, (SELECT hits FROM hit) AS hits FROM api_key`,
        [keyId, hit.bucketPrefix, hit.windowStart, secretHash],
      );
      return rows[0];
    },

    insertRefreshToken: (row: Omit<RefreshTokenRow, 'rotated_at' | 'revoked_at'>, db_: Db = db) => db_('refresh_tokens').insert(row),

    transaction: db.transaction.bind(db),

    lockRefreshToken: (trx: Db, id: string) => trx<RefreshTokenRow>('refresh_tokens').where({ id }).forUpdate().first(),

    markRotated: (trx: Db, id: string) => trx('refresh_tokens').where({ id }).update({ rotated_at: trx.fn.now() }),

    revokeFamily: (familyId: string) =>
      db('refresh_tokens').where({ family_id: familyId }).whereNull('revoked_at').update({ revoked_at: db.fn.now() }),
  };
}

export type AccountsStore = ReturnType<typeof createAccountsStore>;
