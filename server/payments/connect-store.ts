import type { Db } from '../db/knex.js';

/** A started Connect OAuth authorization, as stored: its state and browser binding by their SHA-256 only. */
export interface ConnectStateRow {
  state_hash: string;
  developer_id: string;
  session_id: string;
  via_portal: boolean;
  browser_hash: string;
  expires_at: Date;
  used_at: Date | null;
}

/** Why a callback's state is refused; the state is spent only when it is `ok`. */
export type StateOutcome = { kind: 'ok'; developerId: string } | { kind: 'unknown' | 'used' | 'expired' | 'other_browser' | 'session_ended' };

/** Queries of the processor-connection states (table payment_connect_states, owned here). */
export function createConnectStore(db: Db) {
  return {
    /** Whether the sign-in session is a portal session's (the portal signs in with its own API session). */
    isPortalSession: (sessionId: string) =>
      db('portal_sessions')
        .where({ session_id: sessionId })
        .first('id_hash')
        .then((row) => row !== undefined),

    insertState: async (row: Omit<ConnectStateRow, 'used_at'>, now: Date) => {
      // States nobody came back with are removed here rather than by a timer (only ones well past use).
      await db('payment_connect_states')
        .where('expires_at', '<', new Date(now.getTime() - 86_400_000))
        .delete();
      await db('payment_connect_states').insert(row);
    },

    /**
     * Spends the state when it is known, unused, unexpired, presented by the browser that started
     * it, and its sign-in session (and portal session, when one started it) is still live. The
     * row lock makes two concurrent callbacks with one state take turns: the second finds it used.
     * A refusal changes nothing.
     */
    consumeState: (stateHash: string, browserHash: string | null, now: Date): Promise<StateOutcome> =>
      db.transaction(async (trx) => {
        const row = await trx<ConnectStateRow>('payment_connect_states').where({ state_hash: stateHash }).forUpdate().first();
        if (!row) return { kind: 'unknown' };
        if (row.used_at) return { kind: 'used' };
        if (row.expires_at <= now) return { kind: 'expired' };
        if (browserHash === null || browserHash !== row.browser_hash) return { kind: 'other_browser' };
        const live = await trx('refresh_tokens').where({ family_id: row.session_id, developer_id: row.developer_id }).whereNull('revoked_at').first('id');
        const portal =
          !row.via_portal ||
          (await trx('portal_sessions').where({ session_id: row.session_id }).where('expires_at', '>', now).where('absolute_expires_at', '>', now).first('id_hash'));
        if (!live || !portal) return { kind: 'session_ended' };
        await trx('payment_connect_states').where({ state_hash: stateHash }).update({ used_at: now });
        return { kind: 'ok', developerId: row.developer_id };
      }),
  };
}

export type ConnectStore = ReturnType<typeof createConnectStore>;
