import type { Migration } from '../migration.js';

export const updates: Migration = {
  name: '005_updates',
  async up(db) {
    await db.raw(`
      -- One sequence for every push of the authority, app-level and per-license alike: a later push
      -- always has a higher serial, so "the newer push wins" is a comparison, and an app refuses a
      -- manifest whose serial is below one it has seen (replay, rollback).
      CREATE SEQUENCE push_serials;

      -- The active push of an app (at most one). Deleting the target build clears it (docs/contract.md).
      CREATE TABLE app_pushes (
        app_id text PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
        -- Denormalised from apps (an app never changes owner), like builds and licenses.
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        build_id text NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
        release_notes text NOT NULL,
        serial bigint NOT NULL UNIQUE,
        pushed_at timestamptz NOT NULL
      );
      CREATE INDEX app_pushes_by_build ON app_pushes (build_id);

      -- A per-license push (portal operation). It applies while its serial is above the app push's;
      -- deleting its build clears it too.
      CREATE TABLE license_pushes (
        license_id text PRIMARY KEY REFERENCES licenses(id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        build_id text NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
        release_notes text NOT NULL,
        serial bigint NOT NULL UNIQUE,
        pushed_at timestamptz NOT NULL
      );
      CREATE INDEX license_pushes_by_build ON license_pushes (build_id);

      -- What a device did with a build it was offered. Keyed per build: "Skip this version" holds
      -- until a newer build is pushed, and a re-push of the same build (new notes) stays skipped.
      -- No foreign key to devices: a device reset must not forget a skip or an install.
      CREATE TABLE update_adoptions (
        license_id text NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
        fingerprint_hash text NOT NULL,
        build_id text NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
        state text NOT NULL CHECK (state IN ('installed', 'skipped')),
        at timestamptz NOT NULL,
        PRIMARY KEY (license_id, fingerprint_hash, build_id)
      );
      CREATE INDEX update_adoptions_by_build ON update_adoptions (build_id);
    `);
  },
  async down(db) {
    await db.raw(`DROP TABLE update_adoptions, license_pushes, app_pushes; DROP SEQUENCE push_serials`);
  },
};
