import type { Migration } from '../migration.js';

/** Issue 9: the commerce-platform entitlement webhook, its store licenses and permanent delivery pages. */
export const entitlementWebhook: Migration = {
  name: '014_entitlement_webhook',
  async up(db) {
    await db.raw(`
      -- One webhook per app. The URL token and the secrets are stored as SHA-256 only (docs/design.md):
      -- they are shown once, when enabled or rotated. A rotated secret keeps working until
      -- previous_secret_expires_at (24 hours). Disabling deletes the row: the URL stops answering.
      CREATE TABLE entitlement_webhooks (
        app_id text PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        token_hash text NOT NULL UNIQUE,
        secret_hash text NOT NULL,
        previous_secret_hash text,
        previous_secret_expires_at timestamptz,
        enabled_at timestamptz NOT NULL,
        secret_rotated_at timestamptz
      );

      -- The license of one store (shop) of an app, and the row that serialises the shop's events
      -- (each event locks it). shop is null once redacted; the license row stays, anonymised.
      CREATE TABLE store_licenses (
        id text PRIMARY KEY,
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
        shop text,
        license_id text REFERENCES licenses(id) ON DELETE SET NULL,
        -- 'subscription': a store subscription's free trial (ends with any entitled: false);
        -- 'no_commitment': the 14-day trial of POST .../trial (store events never end it).
        trial_kind text CHECK (trial_kind IN ('subscription', 'no_commitment')),
        delivery_email text,
        subscription_name text,
        attribution jsonb NOT NULL DEFAULT '{}',
        -- The newest occurred_at applied, and whether that event said entitled: older ones are stale.
        last_occurred_at timestamptz,
        last_entitled boolean,
        -- SHA-256 of the permanent delivery URL's token (the token itself is derived from the master key).
        delivery_token_hash text UNIQUE,
        -- Builds offered to the store (current at notification or at a download), and downloads made.
        offered_build_ids text[] NOT NULL DEFAULT '{}',
        downloads_used integer NOT NULL DEFAULT 0,
        -- The license's fee is in the ledger (charged, or exempt as a test): a noop need not ask the ledger again.
        fee_settled boolean NOT NULL DEFAULT false,
        redacted_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE UNIQUE INDEX store_licenses_shop ON store_licenses (app_id, shop) WHERE shop IS NOT NULL;
      CREATE INDEX store_licenses_license ON store_licenses (license_id);

      -- Processed events (deduplication by event id, audit) and companion records. Deleted by a redact.
      CREATE TABLE entitlement_events (
        app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        event_id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('webhook', 'delivery_email')),
        store_license_id text REFERENCES store_licenses(id) ON DELETE CASCADE,
        shop text,
        app_value text,
        entitled boolean,
        occurred_at timestamptz,
        trial boolean NOT NULL DEFAULT false,
        test boolean NOT NULL DEFAULT false,
        topic text,
        platform_status text,
        action text NOT NULL,
        note text,
        license_id text,
        received_at timestamptz NOT NULL,
        PRIMARY KEY (app_id, event_id)
      );
      CREATE INDEX entitlement_events_by_store ON entitlement_events (store_license_id);

      -- Resets of a store license's devices through the companion endpoint: 3 in any 30 days.
      CREATE TABLE store_device_resets (
        store_license_id text NOT NULL REFERENCES store_licenses(id) ON DELETE CASCADE,
        reset_at timestamptz NOT NULL
      );
      CREATE INDEX store_device_resets_by_store ON store_device_resets (store_license_id, reset_at);
    `);
  },
  async down(db) {
    await db.raw(`DROP TABLE store_device_resets, entitlement_events, store_licenses, entitlement_webhooks`);
  },
};
