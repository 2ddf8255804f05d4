import type { Migration } from '../migration.js';

export const licensing: Migration = {
  name: '002_licensing',
  async up(db) {
    await db.raw(`
      CREATE TABLE licenses (
        id text PRIMARY KEY,
        -- Denormalised from apps (an app never changes owner) so every tenant-scoped query is one index.
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        license_key text NOT NULL,
        -- Stored transitions only; EXPIRED by the passing of expires_at is computed at read time.
        status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'REVOKED', 'EXPIRED', 'DEMO')),
        license_type text NOT NULL CHECK (license_type IN ('perpetual', 'subscription', 'trial')),
        device_limit integer NOT NULL CHECK (device_limit >= 1),
        email text,
        -- A trial created without one gets it at its first activation (the no-commitment trial clock).
        expires_at timestamptz,
        features jsonb NOT NULL DEFAULT '{}',
        source text NOT NULL,
        payment_session_id text,
        download_limit integer,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX licenses_license_key_key ON licenses (license_key);
      CREATE INDEX licenses_by_developer ON licenses (developer_id, created_at, id);
      CREATE INDEX licenses_by_app ON licenses (app_id, created_at, id);

      -- Activated devices. Only the salted fingerprint hash the SDK computed, never hardware ids.
      CREATE TABLE devices (
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        fingerprint_hash text NOT NULL CHECK (fingerprint_hash ~ '^[0-9a-f]{64}$'),
        platform text,
        engine_version text,
        app_version text,
        first_seen_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        PRIMARY KEY (license_id, fingerprint_hash)
      );

      -- Trials each computer has started per app. Outlives device resets (and the license itself:
      -- no foreign key to it), so neither grants a machine another trial.
      CREATE TABLE trial_starts (
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        fingerprint_hash text NOT NULL,
        license_id text NOT NULL,
        started_at timestamptz NOT NULL,
        PRIMARY KEY (app_id, fingerprint_hash, license_id)
      );
    `);
  },
  async down(db) {
    await db.raw(`DROP TABLE trial_starts, devices, licenses`);
  },
};
