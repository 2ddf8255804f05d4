import type { Knex } from 'knex';
import { effectivePlan, effectivePlanSqlAt, type Plan } from '../accounts/plan.js';
import type { LicenseFee } from '../billing/fee-rule.js';
import { chargeFeeCtes, feeRecord } from '../billing/store.js';
import { hotQuery, type Db } from '../db/knex.js';
import { deleteLicenseEmails, emailQueuedFor } from '../email/store.js';
import { deliverableBuildsFromJson, newestDeliverableBuildsJsonSql, type DeliverableBuild, type DeliverableBuildJson } from '../delivery/deliverable-builds.js';
import { removeAllDevices, type DeactivationSource } from '../licenses/deactivation-history.js';
import { mintLicenseSql, mintSoldLicense } from '../licenses/mint.js';
import { EFFECTIVE_STATUS_SQL, effectiveStatusSqlAt, type LicenseStatus, type LicenseType } from '../licenses/rules.js';
import type { CurrentWebhook } from './credentials.js';
import { COMMERCE_PLATFORM_SOURCE, type TrialKind } from './rules.js';

export interface WebhookRow {
  app_id: string;
  developer_id: string;
  token_hash: string;
  secret_hash: string;
  previous_secret_hash: string | null;
  previous_secret_expires_at: Date | null;
  enabled_at: Date;
  secret_rotated_at: Date | null;
}

/** The app of a webhook, with what events and companion requests need of it. */
export interface EventApp {
  id: string;
  developer_id: string;
  name: string;
  product_key: string | null;
  default_device_limit: number;
  delivery_mode: string;
  platforms: string[];
  download_limit: number | null;
}

export interface StoreLicenseRow {
  id: string;
  app_id: string;
  developer_id: string;
  shop: string | null;
  license_id: string | null;
  trial_kind: TrialKind | null;
  delivery_email: string | null;
  subscription_name: string | null;
  attribution: Record<string, string>;
  last_occurred_at: Date | null;
  last_entitled: boolean | null;
  delivery_token_hash: string | null;
  offered_build_ids: string[];
  downloads_used: number;
  fee_settled: boolean;
  redacted_at: Date | null;
}

/** The license of a store, as read (locked) at a moment. */
export interface StoreLicense {
  id: string;
  license_key: string;
  license_type: LicenseType;
  effective_status: LicenseStatus;
  expires_at: Date | null;
  email: string | null;
  download_limit: number | null;
}

export interface EventRecord {
  app_id: string;
  event_id: string;
  kind: 'webhook' | 'delivery_email';
  store_license_id: string | null;
  shop: string | null;
  app_value: string | null;
  entitled: boolean | null;
  occurred_at: Date | null;
  trial: boolean;
  test: boolean;
  topic: string | null;
  platform_status: string | null;
  action: string;
  note: string | null;
  license_id: string | null;
  received_at: Date;
}

export interface NewStoreLicenseKey {
  id: string;
  license_key: string;
  license_type: LicenseType;
  device_limit: number;
  email: string | null;
  source: string;
}

/** The license an event mints and the fee it charges, written with its record (FINISH_EVENT). */
export interface EventWrites {
  /** A new license (its id is the shop row's license_id) to insert. */
  mint: { license_key: string; device_limit: number; email: string | null } | null;
  /** The license's fee to charge (billing's rule), once; with its report job. */
  fee: LicenseFee | null;
  developerId: string;
}

export type WebhookApp = EventApp & CurrentWebhook;

type Json<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

const dateOrNull = (value: string | null) => (value === null ? null : new Date(value));

const shopFromJson = (row: Json<StoreLicenseRow>): StoreLicenseRow => ({
  ...row,
  last_occurred_at: dateOrNull(row.last_occurred_at),
  redacted_at: dateOrNull(row.redacted_at),
});

const eventFromJson = (row: Json<EventRecord> | null): EventRecord | undefined =>
  row ? { ...row, occurred_at: dateOrNull(row.occurred_at), received_at: new Date(row.received_at) } : undefined;

const STATUS_AT = (q: Knex, now: Date) => q.raw(`(${EFFECTIVE_STATUS_SQL}) AS effective_status`, [now]);

// Named, not \`*\`: the statement is prepared, and a later migration widening the table must not change its result type.
const STORE_LICENSE_COLUMNS = `id, app_id, developer_id, shop, license_id, trial_kind, delivery_email, subscription_name, attribution,
  last_occurred_at, last_entitled, delivery_token_hash, offered_build_ids, downloads_used, fee_settled, redacted_at`;

const WEBHOOK_BY_TOKEN = `SELECT app_id, developer_id, secret_hash, previous_secret_hash, previous_secret_expires_at
  FROM entitlement_webhooks WHERE token_hash = $1`;

/**
 * Takes (creating it on first sight) the row of one shop of an app and locks it until the
 * transaction ends: every event, companion request and download of a shop runs one at a time.
 */
const LOCK_SHOP = `
  INSERT INTO store_licenses (id, app_id, developer_id, shop, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
  ON CONFLICT (app_id, shop) WHERE shop IS NOT NULL DO UPDATE SET updated_at = store_licenses.updated_at
  RETURNING ${STORE_LICENSE_COLUMNS}`;

const EVENT_COLUMNS =
  'app_id, event_id, kind, store_license_id, shop, app_value, entitled, occurred_at, trial, test, topic, platform_status, action, note, license_id, received_at';

/**
 * The first statement of an event: its app with the webhook row (to confirm the credentials the
 * authenticator took from memory), and, when `app` is the product key, the shop's row taken and
 * locked (created on first sight: every event, companion request and download of a shop runs one
 * at a time). For a row just created (`inserted`) no earlier holder exists, so this statement's
 * snapshot is as good as one taken after the lock: the event id's earlier record (another shop's,
 * or an unactionable one; one committed meanwhile fails the event's insert, which runs again) comes
 * with it. $1 new row id, $2 app, $3 shop, $4 now, $5 the event's app value, $6 event id. With them,
 * the app's newest deliverable builds (server/delivery/deliverable-builds.ts), which a grant offers:
 * no round trip of their own. Builds are not the shop's, so no lock orders their read.
 */
const OPEN_EVENT = `
  WITH app AS (
    SELECT a.id, a.developer_id, a.name, a.product_key, a.default_device_limit, a.delivery_mode, a.platforms, a.download_limit,
      w.token_hash, w.secret_hash, w.previous_secret_hash, w.previous_secret_expires_at, (${effectivePlanSqlAt('$4')}) AS plan
    FROM apps a JOIN entitlement_webhooks w ON w.app_id = a.id JOIN developers ON developers.id = a.developer_id WHERE a.id = $2),
  locked AS (
    INSERT INTO store_licenses (id, app_id, developer_id, shop, created_at, updated_at)
    SELECT $1, id, developer_id, $3, $4, $4 FROM app WHERE product_key = $5
    ON CONFLICT (app_id, shop) WHERE shop IS NOT NULL DO UPDATE SET updated_at = store_licenses.updated_at
    RETURNING ${STORE_LICENSE_COLUMNS}, (id = $1) AS inserted)
  SELECT app.*, row_to_json(locked) AS shop,
    (SELECT row_to_json(e) FROM (SELECT ${EVENT_COLUMNS} FROM entitlement_events WHERE app_id = $2 AND event_id = $6) e) AS prior,
    ${newestDeliverableBuildsJsonSql('app.id', 'app.delivery_mode')} AS builds
  FROM app LEFT JOIN locked ON true`;

/**
 * After the shop's lock, for a row that existed (a statement of its own, so this one's snapshot sees
 * what the previous holder committed): the event id's earlier record and the shop's license, locked.
 * $1 app, $2 event id, $3 license id or null, $4 now.
 */
const PRIOR_AND_LICENSE = `
  WITH lic AS (
    SELECT id, license_key, license_type, expires_at, email, download_limit, (${effectiveStatusSqlAt('$4')}) AS effective_status
    FROM licenses WHERE id = $3 FOR UPDATE)
  SELECT (SELECT row_to_json(e) FROM (SELECT ${EVENT_COLUMNS} FROM entitlement_events WHERE app_id = $1 AND event_id = $2) e) AS prior,
    (SELECT row_to_json(lic) FROM lic) AS license`;

/**
 * What an applied event leaves, in one statement: the license it mints (when $3; licenses/mint.ts's text), the license's fee
 * with the job reporting it (when $4; billing's CTEs: once per license, a fee already in the ledger
 * is left alone), the shop's row ($1) and the event's record ($2), each a jsonb row of its table.
 * The fee's report job is left for the runner's next look (billing/store.ts FEE_REPORT_JOB).
 */
const FINISH_EVENT = `
  WITH lic AS (
    ${mintLicenseSql({ record: '$3::jsonb', where: '$3::jsonb IS NOT NULL' })}),
  ${chargeFeeCtes({ record: '$4::jsonb', where: '$4::jsonb IS NOT NULL' })},
  shop AS (
    UPDATE store_licenses s SET license_id = r.license_id, trial_kind = r.trial_kind, delivery_email = r.delivery_email,
      subscription_name = r.subscription_name, attribution = r.attribution, last_occurred_at = r.last_occurred_at, last_entitled = r.last_entitled,
      delivery_token_hash = r.delivery_token_hash, offered_build_ids = r.offered_build_ids, fee_settled = r.fee_settled, updated_at = r.updated_at
    FROM jsonb_populate_record(NULL::store_licenses, $1::jsonb) r WHERE s.id = r.id),
  ev AS (
    INSERT INTO entitlement_events (${EVENT_COLUMNS})
    SELECT ${EVENT_COLUMNS.split(', ')
      .map((c) => `e.${c}`)
      .join(', ')} FROM jsonb_populate_record(NULL::entitlement_events, $2::jsonb) e)
  SELECT 1`;

/** The app of a companion request, with the webhook row to confirm its credentials against. */
const WEBHOOK_APP = `
  SELECT a.id, a.developer_id, a.name, a.product_key, a.default_device_limit, a.delivery_mode, a.platforms, a.download_limit,
    w.token_hash, w.secret_hash, w.previous_secret_hash, w.previous_secret_expires_at
  FROM apps a JOIN entitlement_webhooks w ON w.app_id = a.id WHERE a.id = $1`;

const EVENT_APP = `SELECT id, developer_id, name, product_key, default_device_limit, delivery_mode, platforms, download_limit FROM apps WHERE id = $1`;

export function createEntitlementsStore(db: Db) {
  return {
    transaction: <T>(work: (trx: Knex.Transaction) => Promise<T>) => db.transaction(work),
    db,

    /** A READY build of the app, with what sending its package needs. */
    readyBuild: (q: Knex, appId: string, id: string) =>
      q('builds')
        .where({ id, app_id: appId, status: 'READY' })
        .first<DeliverableBuild | undefined>('id', 'platform', 'version', 'package_key', 'package_name', 'protected_size_bytes', 'sha256', 'completed_at'),

    webhookByToken: async (tokenHash: string) =>
      (
        await hotQuery<Pick<WebhookRow, 'app_id' | 'developer_id' | 'secret_hash' | 'previous_secret_hash' | 'previous_secret_expires_at'>>(
          db,
          WEBHOOK_BY_TOKEN,
          [tokenHash],
          'entitlements.webhook_by_token',
        )
      )[0],

    /** The developer's app with its owner's plan now; never another tenant's. */
    appWithPlan: (developerId: string, appId: string, now: Date) =>
      db('apps')
        .join('developers', 'developers.id', 'apps.developer_id')
        .where({ 'apps.id': appId, 'apps.developer_id': developerId })
        .first<{ id: string; product_key: string | null; plan: Plan } | undefined>('apps.id', 'apps.product_key', effectivePlan(db, now)),

    webhookOf: (appId: string) => db('entitlement_webhooks').where({ app_id: appId }).first<WebhookRow | undefined>(),

    /** false when the app already has a webhook. */
    insertWebhook: async (row: WebhookRow) => (await db('entitlement_webhooks').insert(row).onConflict('app_id').ignore().returning('app_id')).length === 1,

    rotateSecret: (appId: string, secretHash: string, previousExpiresAt: Date, now: Date) =>
      db('entitlement_webhooks')
        .where({ app_id: appId })
        .update({
          previous_secret_hash: db.raw('secret_hash'),
          previous_secret_expires_at: previousExpiresAt,
          secret_hash: secretHash,
          secret_rotated_at: now,
        })
        .then((n) => n === 1),

    deleteWebhook: (appId: string) =>
      db('entitlement_webhooks')
        .where({ app_id: appId })
        .delete()
        .then((n) => n === 1),

    /** The company name of a developer: who sells their apps, as the hosted pages name them. */
    sellerName: async (q: Knex, developerId: string) => (await q('developers').where({ id: developerId }).first<{ company_name: string }>('company_name'))!.company_name,

    eventApp: async (q: Knex, appId: string) => (await hotQuery<EventApp>(q, EVENT_APP, [appId], 'entitlements.event_app'))[0],

    /** OPEN_EVENT: the app with its webhook row; the shop's row, locked, when the event's app value is the product key. */
    openEvent: async (trx: Knex.Transaction, params: { id: string; appId: string; shop: string; now: Date; appValue: string; eventId: string }) => {
      const row = (
        await hotQuery<WebhookApp & { plan: Plan; shop: (Json<StoreLicenseRow> & { inserted: boolean }) | null; prior: Json<EventRecord> | null; builds: DeliverableBuildJson[] }>(
          trx,
          OPEN_EVENT,
          [params.id, params.appId, params.shop, params.now, params.appValue, params.eventId],
          'entitlements.open_event',
        )
      )[0];
      if (!row) return undefined;
      const { shop, prior, plan, builds, ...app } = row;
      const locked = shop && (({ inserted, ...rest }) => ({ row: shopFromJson(rest), inserted }))(shop);
      return {
        app: app as WebhookApp,
        /** The developer's plan now: grants need Pro (docs/contract.md's plan rules). */
        plan,
        shop: locked || undefined,
        prior: eventFromJson(prior),
        /** The app's newest deliverable builds, for what a grant offers. */
        builds: deliverableBuildsFromJson(builds),
      };
    },

    /** PRIOR_AND_LICENSE: the event id's earlier record and the shop's license, locked. */
    priorAndLicense: async (trx: Knex.Transaction, params: { appId: string; eventId: string; licenseId: string | null; now: Date }) => {
      const row = (
        await hotQuery<{
          prior: Json<EventRecord> | null;
          license: (Omit<StoreLicense, 'expires_at'> & { expires_at: string | null }) | null;
        }>(trx, PRIOR_AND_LICENSE, [params.appId, params.eventId, params.licenseId, params.now], 'entitlements.prior_and_license')
      )[0]!;
      const license: StoreLicense | undefined = row.license ? { ...row.license, expires_at: dateOrNull(row.license.expires_at) } : undefined;
      return { prior: eventFromJson(row.prior), license };
    },

    /** FINISH_EVENT: the minted license and its fee, the shop's row as the event left it, and the event's record (failing on an id recorded meanwhile). */
    finishEvent: async (trx: Knex.Transaction, row: StoreLicenseRow, event: EventRecord, now: Date, writes: EventWrites) => {
      const shop = { ...row, last_occurred_at: event.occurred_at, last_entitled: event.entitled, updated_at: now };
      const record: EventRecord = { ...event, store_license_id: row.id, license_id: row.license_id, received_at: now };
      const mint = writes.mint && {
        ...writes.mint,
        id: row.license_id,
        developer_id: writes.developerId,
        app_id: event.app_id,
        license_type: 'subscription',
        source: COMMERCE_PLATFORM_SOURCE,
      };
      const fee = writes.fee && feeRecord({ ...writes.fee, developer_id: writes.developerId, app_id: event.app_id, source: COMMERCE_PLATFORM_SOURCE, charged_at: now });
      await hotQuery(trx, FINISH_EVENT, [JSON.stringify(shop), JSON.stringify(record), mint && JSON.stringify(mint), fee], 'entitlements.finish_event');
    },

    /** WEBHOOK_APP: a companion request's app with its webhook row (absent: disabled or deleted). */
    webhookApp: async (q: Knex, appId: string) => (await hotQuery<WebhookApp>(q, WEBHOOK_APP, [appId], 'entitlements.webhook_app'))[0],

    lockShop: async (trx: Knex.Transaction, row: { id: string; appId: string; developerId: string; shop: string; now: Date }) =>
      (await hotQuery<StoreLicenseRow>(trx, LOCK_SHOP, [row.id, row.appId, row.developerId, row.shop, row.now], 'entitlements.lock_shop'))[0]!,

    /** A shop's row, locked, without creating one. */
    findShop: (trx: Knex.Transaction, appId: string, shop: string) => trx('store_licenses').where({ app_id: appId, shop }).forUpdate().first<StoreLicenseRow | undefined>(),

    updateShop: (trx: Knex.Transaction, id: string, patch: Partial<Omit<StoreLicenseRow, 'id' | 'app_id' | 'developer_id'>> & { updated_at: Date }) =>
      trx('store_licenses')
        .where({ id })
        .update({ ...patch, ...(patch.attribution && { attribution: JSON.stringify(patch.attribution) }) }),

    findEvent: (trx: Knex.Transaction, appId: string, eventId: string) => trx('entitlement_events').where({ app_id: appId, event_id: eventId }).first<EventRecord | undefined>(),

    /** false when the event id is already recorded (a concurrent twin waits here for the first to commit). */
    insertEvent: async (trx: Knex.Transaction, row: EventRecord) =>
      (await trx('entitlement_events').insert(row).onConflict(['app_id', 'event_id']).ignore().returning('event_id')).length === 1,

    /** Records an applied or skipped event; fails on an id already recorded. */
    recordEvent: (trx: Knex.Transaction, row: EventRecord) => trx('entitlement_events').insert(row),

    /** The license of a store, locked: activations and device resets take the same lock. */
    lockLicense: (trx: Knex.Transaction, id: string, now: Date) =>
      trx('licenses').where({ id }).forUpdate().first<StoreLicense | undefined>('id', 'license_key', 'license_type', 'expires_at', 'email', 'download_limit', STATUS_AT(trx, now)),

    insertLicense: (trx: Knex.Transaction, row: NewStoreLicenseKey & { developer_id: string; app_id: string }) => mintSoldLicense(trx, row),

    updateLicense: (
      trx: Knex.Transaction,
      id: string,
      patch: Partial<{ status: LicenseStatus; license_type: LicenseType; expires_at: Date | null; revoked_at: Date | null; email: string | null }> & { updated_at: Date },
    ) => trx('licenses').where({ id }).update(patch),

    /** Deactivates every device of a license, each recorded in its history as `source`'s; the trial starts of its computers are kept. */
    removeDevices: (trx: Knex.Transaction, licenseId: string, source: Extract<DeactivationSource, 'store_reset' | 'revoked'>, now: Date) =>
      removeAllDevices(trx, licenseId, source, now),

    /** docs/contract.md: a converted paying trial frees the machine for another trial of the app. */
    freeTrialMachines: (trx: Knex.Transaction, licenseId: string) => trx('trial_starts').where({ license_id: licenseId }).delete(),

    /** The store license behind a delivery page token, with its app. */
    byDeliveryToken: (tokenHash: string) => db('store_licenses').where({ delivery_token_hash: tokenHash }).first<StoreLicenseRow | undefined>(),

    lockStoreLicense: (trx: Knex.Transaction, id: string) => trx('store_licenses').where({ id }).forUpdate().first<StoreLicenseRow | undefined>(),

    /** Whether the license is a store's (has a download allowance). */
    isStoreLicense: async (licenseId: string) => Boolean(await db('store_licenses').where({ license_id: licenseId }).first('id')),

    /** The store license of a license, locked like `lockStoreLicense`; undefined when the license is not a store's. */
    lockStoreLicenseOf: (trx: Knex.Transaction, licenseId: string) => trx('store_licenses').where({ license_id: licenseId }).forUpdate().first<StoreLicenseRow | undefined>(),

    readLicense: (q: Knex, id: string, now: Date) =>
      q('licenses').where({ id }).first<StoreLicense | undefined>('id', 'license_key', 'license_type', 'expires_at', 'email', 'download_limit', STATUS_AT(q, now)),

    emailQueued: emailQueuedFor,

    /** Device resets through the companion endpoint in the window starting at `since`, oldest first. */
    resetsSince: (trx: Knex.Transaction, storeLicenseId: string, since: Date) =>
      trx('store_device_resets').where({ store_license_id: storeLicenseId }).where('reset_at', '>', since).orderBy('reset_at').pluck<Date[]>('reset_at'),

    recordReset: (trx: Knex.Transaction, storeLicenseId: string, now: Date) => trx('store_device_resets').insert({ store_license_id: storeLicenseId, reset_at: now }),

    /** A redact: the shop's event history and the license's emails (addresses, keys) go. */
    deleteHistory: async (trx: Knex.Transaction, row: Pick<StoreLicenseRow, 'id' | 'app_id' | 'shop' | 'license_id'>) => {
      const events = await trx('entitlement_events')
        .where({ app_id: row.app_id })
        .where((w) => {
          w.where({ store_license_id: row.id });
          if (row.shop) w.orWhere({ shop: row.shop });
        })
        .delete();
      const emails = row.license_id ? await deleteLicenseEmails(trx, row.license_id) : 0;
      return { events, emails };
    },
  };
}

export type EntitlementsStore = ReturnType<typeof createEntitlementsStore>;
