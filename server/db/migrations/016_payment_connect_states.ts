import type { Migration } from '../migration.js';

/** Connecting a processor account by Connect OAuth: the `state` of each started authorization. */
export const paymentConnectStates: Migration = {
  name: '016_payment_connect_states',
  async up(db) {
    await db.raw(`
      -- One row per started authorization, found by the SHA-256 of its state (the raw value only
      -- travels in the authorize URL). Bound to the developer, the sign-in session that started it
      -- and the browser (the SHA-256 of an HttpOnly cookie set when it started); single use
      -- (used_at), 10 minutes (expires_at).
      CREATE TABLE payment_connect_states (
        state_hash text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        session_id text NOT NULL,
        -- A portal session started it: it must still be signed in when the browser comes back.
        via_portal boolean NOT NULL,
        browser_hash text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX payment_connect_states_by_developer ON payment_connect_states (developer_id);
      CREATE INDEX payment_connect_states_by_expiry ON payment_connect_states (expires_at);

      -- Connections made before ownership was proven (an id typed in) stay, so live sales keep
      -- delivering, but are marked unproven: the developer who proves the account by OAuth takes it.
      ALTER TABLE developers ADD COLUMN payment_account_proven boolean NOT NULL DEFAULT false;
    `);
  },
  async down(db) {
    await db.raw('ALTER TABLE developers DROP COLUMN payment_account_proven; DROP TABLE payment_connect_states');
  },
};
