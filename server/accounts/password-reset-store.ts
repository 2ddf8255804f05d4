import type { Db } from '../db/knex.js';

/** Password reset tokens, by their SHA-256: single use, short-lived. */
export function createPasswordResetStore(db: Db) {
  return {
    /** Stores a token in `trx`; the developer's used and expired ones go. */
    async insert(trx: Db, row: { token_hash: string; developer_id: string; expires_at: Date }, now: Date): Promise<void> {
      await trx('password_resets')
        .where({ developer_id: row.developer_id })
        .where((spent) => spent.whereNotNull('used_at').orWhere('expires_at', '<=', now))
        .delete();
      await trx('password_resets').insert(row);
    },

    /** Whether a token is unused and unexpired (the hosted page asks before showing its form). */
    isUsable: async (tokenHash: string, now: Date) =>
      (await db('password_resets').where({ token_hash: tokenHash }).whereNull('used_at').where('expires_at', '>', now).first('token_hash')) !== undefined,

    /**
     * Uses a token once, in `trx`: its developer, else undefined (unknown, used or expired). A
     * concurrent use of the same token waits on the row until `trx` ends, then finds it used. The
     * developer's other tokens are used up with it.
     */
    async consume(trx: Db, tokenHash: string, now: Date): Promise<string | undefined> {
      const [row] = await trx('password_resets')
        .where({ token_hash: tokenHash })
        .whereNull('used_at')
        .where('expires_at', '>', now)
        .update({ used_at: now })
        .returning<{ developer_id: string }[]>('developer_id');
      if (row) await trx('password_resets').where({ developer_id: row.developer_id }).whereNull('used_at').update({ used_at: now });
      return row?.developer_id;
    },
  };
}

export type PasswordResetStore = ReturnType<typeof createPasswordResetStore>;
