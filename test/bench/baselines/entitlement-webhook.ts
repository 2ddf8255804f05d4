import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { serveBaseline } from './serve.js';

// What an entitlement event cannot do without: find the webhook by its URL token's hash, compare
// the secret's hash, then one statement that upserts the shop's row, records the event (once per
// event id) and, for a shop without a license, mints it with its fee and the fee's report job.
// No validation, no ordering rules, no delivery page, no framework.
// Its fee's report job is queued never to come due ('infinity') and the fee recorded as not
// reported: the baseline never reports it, and Latchkey's job runner, on the same database, must
// not do that work for it (it did, counted against Latchkey, until the jobs were made never due).

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

const WEBHOOK = `SELECT app_id, developer_id, secret_hash FROM entitlement_webhooks WHERE token_hash = $1`;

const APPLY = `
  WITH shop AS (
    INSERT INTO store_licenses (id, app_id, developer_id, shop, license_id, last_occurred_at, last_entitled, created_at, updated_at)
    VALUES ($1, $2, $3, $4, CASE WHEN $6 THEN $8 END, $5, $6, now(), now())
    ON CONFLICT (app_id, shop) WHERE shop IS NOT NULL DO UPDATE SET last_occurred_at = excluded.last_occurred_at, last_entitled = excluded.last_entitled, updated_at = now()
    RETURNING id, license_id),
  ev AS (
    INSERT INTO entitlement_events (app_id, event_id, kind, store_license_id, shop, entitled, occurred_at, action, received_at)
    SELECT $2, $7, 'webhook', id, $4, $6, $5, 'applied', now() FROM shop ON CONFLICT DO NOTHING RETURNING 1),
  lic AS (
    INSERT INTO licenses (id, developer_id, app_id, license_key, license_type, device_limit, source)
    SELECT $8, $3, $2, $9, 'subscription', 2, 'commerce_platform' FROM shop, ev WHERE shop.license_id = $8 RETURNING id),
  fee AS (
    INSERT INTO license_fees (license_id, developer_id, app_id, amount_cents, currency, source, charged_at, report_idempotency_key, report_status)
    SELECT id, $3, $2, 400, 'usd', 'commerce_platform', now(), 'license_fee:' || id, 'not_reported' FROM lic RETURNING license_id),
  job AS (INSERT INTO jobs (kind, payload, max_attempts, run_after) SELECT 'report_license_fee', json_build_object('license_id', license_id), 12, 'infinity' FROM fee RETURNING 1)
  SELECT (SELECT count(*) FROM lic) AS minted`;

serveBaseline(async ({ pool, path, body, headers }) => {
  const token = path.split('/').pop() ?? '';
  const { rows } = await pool.query(WEBHOOK, [sha256(`entitlement-webhook-token:${token}`)]);
  const hook = rows[0];
  const given = Buffer.from(sha256(`entitlement-webhook-secret:${String(headers['x-merchantops-secret'])}`));
  if (!hook || !timingSafeEqual(given, Buffer.from(hook.secret_hash))) throw new Error('refused');
  const event = JSON.parse(body);
  const licenseId = `lic_${randomBytes(12).toString('hex')}`;
  const result = await pool.query(APPLY, [
    `stl_${randomBytes(12).toString('hex')}`,
    hook.app_id,
    hook.developer_id,
    event.shop,
    event.occurred_at,
    event.entitled,
    event.event_id,
    licenseId,
    randomBytes(8).toString('hex').toUpperCase(),
  ]);
  return { ok: true, event_id: event.event_id, minted: Number(result.rows[0].minted) };
});
