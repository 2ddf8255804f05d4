import type { Migration } from '../migration.js';

export const foundation: Migration = {
  name: '001_foundation',
  async up(db) {
    await db.raw(`
      CREATE TABLE developers (
        id text PRIMARY KEY,
        email text NOT NULL,
        password_hash text NOT NULL,
        company_name text NOT NULL,
        plan text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro')),
        two_factor_enabled boolean NOT NULL DEFAULT false,
        totp_secret_sealed text,
        totp_pending_sealed text,
        totp_last_step bigint,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX developers_email_key ON developers (lower(email));

      CREATE TABLE backup_codes (
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        code_hash text NOT NULL,
        pending boolean NOT NULL,
        used_at timestamptz,
        PRIMARY KEY (developer_id, code_hash)
      );

      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        secret_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      );
      CREATE UNIQUE INDEX api_keys_one_active ON api_keys (developer_id) WHERE revoked_at IS NULL;

      CREATE TABLE refresh_tokens (
        id text PRIMARY KEY,
        family_id text NOT NULL,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        secret_hash text NOT NULL,
        expires_at timestamptz NOT NULL,
        rotated_at timestamptz,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);

      CREATE TABLE apps (
        id text PRIMARY KEY,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        name text NOT NULL,
        platforms text[] NOT NULL,
        protection_level text NOT NULL,
        price_id text,
        delivery_mode text NOT NULL DEFAULT 'all' CHECK (delivery_mode IN ('all', 'released_only')),
        product_key text,
        trials_per_computer integer NOT NULL DEFAULT 1,
        default_device_limit integer NOT NULL DEFAULT 2,
        offline_grace_hours integer NOT NULL DEFAULT 72,
        download_limit integer,
        fingerprint_salt text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX apps_price_id_key ON apps (price_id) WHERE price_id IS NOT NULL;
      CREATE INDEX apps_by_developer ON apps (developer_id, created_at, id);

      -- Fixed-window counters shared by every server process. UNLOGGED: no WAL on the hot path;
      -- a crash forgets the current windows, which only lets a client start over.
      CREATE UNLOGGED TABLE rate_limit_hits (
        bucket text NOT NULL,
        window_start timestamptz NOT NULL,
        hits integer NOT NULL,
        PRIMARY KEY (bucket, window_start)
      );
    `);
  },
  async down(db) {
    await db.raw(`DROP TABLE rate_limit_hits, apps, refresh_tokens, api_keys, backup_codes, developers`);
  },
};
