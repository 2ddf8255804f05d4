import type { Migration } from '../migration.js';

export const builds: Migration = {
  name: '004_builds',
  async up(db) {
    await db.raw(`
      CREATE TABLE builds (
        id text PRIMARY KEY,
        -- Denormalised from apps (an app never changes owner) so tenant-scoped reads need no join.
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        status text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'PROCESSING', 'READY', 'FAILED')),
        platform text NOT NULL,
        python_version text,
        version text,
        -- The app's level while queued; the level applied once processed.
        protection_level text NOT NULL,
        scan_status text NOT NULL DEFAULT 'PENDING' CHECK (scan_status IN ('PENDING', 'CLEAN', 'INFECTED', 'REJECTED')),
        package_format text CHECK (package_format IN ('single_executable', 'javascript_bundle', 'as_uploaded')),
        engine_version text,
        failure_reason text,
        artifact_name text NOT NULL,
        artifact_key text NOT NULL,
        artifact_size_bytes bigint NOT NULL,
        -- Hashed by the build's job, which reads the artifact anyway: not on the upload's path.
        artifact_sha256 text,
        -- What customers download: the protected package, or the developer's signed replacement.
        package_name text,
        package_key text,
        protected_size_bytes bigint,
        sha256 text,
        released boolean NOT NULL DEFAULT false,
        signed_package_at timestamptz,
        created_at timestamptz NOT NULL,
        completed_at timestamptz,
        CHECK ((status = 'READY') = (package_key IS NOT NULL))
      );
      CREATE INDEX builds_by_app ON builds (app_id, created_at, id);

      -- Background work (server/jobs): claimed with FOR UPDATE SKIP LOCKED under a lease that the
      -- working process renews; a lapsed lease means its process died and the job runs again.
      CREATE TABLE jobs (
        id bigserial PRIMARY KEY,
        kind text NOT NULL,
        payload jsonb NOT NULL,
        run_after timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL CHECK (max_attempts >= 1),
        locked_by text,
        locked_until timestamptz,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX jobs_due ON jobs (run_after, id);
    `);
  },
  async down(db) {
    await db.raw(`DROP TABLE jobs, builds`);
  },
};
