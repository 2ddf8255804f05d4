import { hotQuery, type Db } from '../db/knex.js';
import { RequestError } from '../errors.js';
import type { ApiKeyScope } from '../http/auth.js';
import { API_KEY_CHANNELS } from './credential-cache.js';

export interface ApiKeyRow {
  id: string;
  developer_id: string;
  name: string;
  scopes: ApiKeyScope[];
  created_at: Date;
  last_used_at: Date | null;
}

export interface NewApiKey {
  id: string;
  name: string;
  scopes: ApiKeyScope[];
  secretHash: string;
}

const LISTED = ['id', 'developer_id', 'name', 'scopes', 'created_at', 'last_used_at'] as const;

export function createApiKeyStore(db: Db) {
  /** Every server process is told of each key revoked in `trx` when it commits (their caches drop it); answers the ids. */
  async function notifyRevoked(trx: Db, revoked: { id: string }[]): Promise<string[]> {
    for (const { id } of revoked) await trx.raw('SELECT pg_notify(?, ?)', [API_KEY_CHANNELS.revoked, id]);
    return revoked.map((r) => r.id);
  }

  const insert = (trx: Db, developerId: string, key: NewApiKey) =>
    trx('api_keys')
      .insert({ id: key.id, developer_id: developerId, name: key.name, scopes: key.scopes, secret_hash: key.secretHash })
      .returning(LISTED)
      .then((rows: ApiKeyRow[]) => rows[0]!);

  return {
    /** The active keys, oldest first; never their secrets. */
    listActive: (developerId: string): Promise<ApiKeyRow[]> =>
      db('api_keys')
        .where({ developer_id: developerId })
        .whereNull('revoked_at')
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
        .select(LISTED),

    isActive: async (developerId: string, keyId: string) =>
      (await db('api_keys').where({ id: keyId, developer_id: developerId }).whereNull('revoked_at').first('id')) !== undefined,

    /** Adds a key unless the developer has `max` active ones (409); concurrent creations queue on the developer row. */
    create: (developerId: string, key: NewApiKey, max: number) =>
      db.transaction(async (trx) => {
        await trx('developers').where({ id: developerId }).forUpdate().first('id');
        const [active] = await trx('api_keys').where({ developer_id: developerId }).whereNull('revoked_at').count<{ count: string }[]>('* as count');
        if (Number(active!.count) >= max) throw new RequestError('API_KEY_LIMIT_REACHED', `An account has at most ${max} API keys: revoke one first`);
        return insert(trx, developerId, key);
      }),

    /**
     * Revokes every active key and stores the new one, atomically: exactly one key works
     * afterwards, also under concurrent rotations (they queue on the developer row). Answers the
     * new key and the revoked key ids.
     */
    rotate: (developerId: string, key: NewApiKey) =>
      db.transaction(async (trx) => {
        await trx('developers').where({ id: developerId }).forUpdate().first('id');
        const revoked: { id: string }[] = await trx('api_keys').where({ developer_id: developerId }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() }).returning('id');
        return { key: await insert(trx, developerId, key), revoked: await notifyRevoked(trx, revoked) };
      }),

    /** Revokes one active key of the developer; false when they have none by that id. */
    revoke: (developerId: string, keyId: string) =>
      db.transaction(async (trx) => {
        const revoked: { id: string }[] = await trx('api_keys')
          .where({ id: keyId, developer_id: developerId })
          .whereNull('revoked_at')
          .update({ revoked_at: trx.fn.now() })
          .returning('id');
        return (await notifyRevoked(trx, revoked)).length === 1;
      }),

    /** The active key's owner, scopes, last use and secret hash; the service compares the hash in constant time. */
    findActive: async (keyId: string) =>
      (
        await hotQuery<{ developer_id: string; secret_hash: string; scopes: ApiKeyScope[]; last_used_at: Date | null }>(
          db,
          'SELECT developer_id, secret_hash, scopes, last_used_at FROM api_keys WHERE id = $1 AND revoked_at IS NULL',
          [keyId],
          'accounts.active_api_key',
        )
      )[0],

    /** Records a use at `at` unless one within `everyMs` before it is recorded already: at most one write per key per interval. */
    recordUse: (keyId: string, at: Date, everyMs: number) =>
      hotQuery(
        db,
        'UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)',
        [keyId, at, new Date(at.getTime() - everyMs)],
        'accounts.api_key_used',
      ),
  };
}

export type ApiKeyStore = ReturnType<typeof createApiKeyStore>;
