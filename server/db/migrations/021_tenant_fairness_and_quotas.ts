import type { Migration } from '../migration.js';

/**
 * One tenant may not starve the others (docs/contract.md, Limits: tenant quotas; server/quotas):
 * jobs carry their developer so the runner takes turns between tenants and caps each one's running
 * jobs; per-tenant usage counters in fixed windows; licenses and delivery emails counted where
 * every path writes them, the database, so no path can skip its quota.
 */
export const tenantFairnessAndQuotas: Migration = {
  name: '021_tenant_fairness_and_quotas',
  async up(db) {
    await db.raw(`
      -- The tenant a job works for. Null: no tenant (a job from before this column whose owner is gone).
      ALTER TABLE jobs ADD COLUMN developer_id text;
      UPDATE jobs j SET developer_id = b.developer_id FROM builds b WHERE j.kind = 'protect_build' AND b.id = j.payload->>'build_id';
      UPDATE jobs j SET developer_id = e.developer_id FROM email_outbox e WHERE j.kind = 'send_email' AND e.id = j.payload->>'email_id';
      UPDATE jobs j SET developer_id = f.developer_id FROM license_fees f WHERE j.kind = 'report_license_fee' AND f.license_id = j.payload->>'license_id';
      -- A tenant's oldest due job, and its running ones, without a scan of everyone's.
      CREATE INDEX jobs_by_tenant ON jobs (developer_id, run_after, id);
      CREATE INDEX jobs_leased_by_tenant ON jobs (developer_id) WHERE locked_until IS NOT NULL;

      -- When the runner last started a job of each tenant: the turn goes to the one served longest ago.
      CREATE TABLE job_tenant_turns (
        developer_id text PRIMARY KEY,
        served_at timestamptz NOT NULL
      );

      -- Limits the database enforces itself (written by the server at start from its configuration).
      CREATE TABLE tenant_quota_limits (
        metric text PRIMARY KEY CHECK (metric IN ('licenses_per_hour', 'emails_per_hour')),
        max_per_window bigint NOT NULL CHECK (max_per_window >= 0)
      );
      INSERT INTO tenant_quota_limits (metric, max_per_window) VALUES ('licenses_per_hour', 10000), ('emails_per_hour', 2000);

      -- One row per tenant and metric: what it used in the current fixed window (reset when a new one starts).
      CREATE TABLE tenant_quota_usage (
        developer_id text NOT NULL,
        metric text NOT NULL,
        window_start timestamptz NOT NULL,
        used bigint NOT NULL,
        PRIMARY KEY (developer_id, metric)
      );

      -- Counts amount against the tenant's metric in the current window of window_seconds (the
      -- database's clock, one for every process) and raises SQLSTATE LQ429 past max_per_window,
      -- undoing the statement: the row lock makes concurrent takers of one tenant wait for each
      -- other, so together they never pass the limit. DETAIL is the seconds until the window ends,
      -- HINT the metric and limit, read by server/quotas/errors.ts.
      CREATE FUNCTION take_tenant_quota(p_developer text, p_metric text, p_window_seconds integer, p_amount bigint, p_max bigint)
      RETURNS bigint LANGUAGE plpgsql AS $$
      DECLARE
        win timestamptz := to_timestamp(floor(extract(epoch FROM now()) / p_window_seconds) * p_window_seconds);
        total bigint;
      BEGIN
        INSERT INTO tenant_quota_usage AS u (developer_id, metric, window_start, used)
        VALUES (p_developer, p_metric, win, p_amount)
        ON CONFLICT (developer_id, metric) DO UPDATE
          SET used = CASE WHEN u.window_start = excluded.window_start THEN u.used + excluded.used ELSE excluded.used END,
              window_start = excluded.window_start
        RETURNING used INTO total;
        IF total > p_max THEN
          RAISE EXCEPTION 'tenant quota % exceeded', p_metric USING
            ERRCODE = 'LQ429',
            DETAIL = greatest(1, ceil(extract(epoch FROM win + make_interval(secs => p_window_seconds) - now())))::text,
            HINT = p_metric || ' ' || p_max || ' ' || (total - p_amount);
        END IF;
        RETURN total;
      END $$;

      -- Licenses: every path that mints one (API, marketplace, redemption, checkout, entitlement
      -- webhook, trials) inserts a row; AFTER, so a conflicting insert that kept nothing counts nothing.
      CREATE FUNCTION count_tenant_row() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM take_tenant_quota(NEW.developer_id, TG_ARGV[0], 3600, 1,
          coalesce((SELECT max_per_window FROM tenant_quota_limits WHERE metric = TG_ARGV[0]), 9223372036854775807));
        RETURN NULL;
      END $$;
      CREATE TRIGGER licenses_count_quota AFTER INSERT ON licenses
        FOR EACH ROW EXECUTE FUNCTION count_tenant_row('licenses_per_hour');
      -- Emails to a tenant's customers (license delivery); the developer's own account emails are not counted.
      CREATE TRIGGER email_outbox_count_quota AFTER INSERT ON email_outbox
        FOR EACH ROW WHEN (NEW.kind = 'license_delivery') EXECUTE FUNCTION count_tenant_row('emails_per_hour');
    `);
  },
  async down(db) {
    await db.raw(`
      DROP TRIGGER email_outbox_count_quota ON email_outbox;
      DROP TRIGGER licenses_count_quota ON licenses;
      DROP FUNCTION count_tenant_row();
      DROP FUNCTION take_tenant_quota(text, text, integer, bigint, bigint);
      DROP TABLE tenant_quota_usage, tenant_quota_limits, job_tenant_turns;
      DROP INDEX jobs_leased_by_tenant, jobs_by_tenant;
      ALTER TABLE jobs DROP COLUMN developer_id;
    `);
  },
};
