import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { serveBaseline } from './serve.js';

// What fulfilling a checkout notification cannot do without: Stripe's signature check on the raw
// body, reading the session back from the processor, then one statement that records the event
// and inserts the license, its fee, the fee's report job and the delivery email. No validation,
// no framework, no template: a plain-text email with the key and an HMAC-signed link.
// Its fee's report job is queued never to come due ('infinity') and the fee recorded as not
// reported: the baseline never reports it, and Latchkey's job runner, on the same database, must
// not do that work for it (it did, counted against Latchkey, until the jobs were made never due).

const required = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is required`);
  })();
const STRIPE_API_BASE = required('STRIPE_API_BASE');
const STRIPE_SECRET_KEY = required('STRIPE_SECRET_KEY');
const STRIPE_WEBHOOK_SECRET = required('STRIPE_WEBHOOK_SECRET');
const linkKey = randomBytes(32);

function verifySignature(header: string, body: string): void {
  const parts = new Map(header.split(',').map((kv) => kv.split('=') as [string, string]));
  const expected = createHmac('sha256', STRIPE_WEBHOOK_SECRET)
    .update(`${parts.get('t')}.${body}`)
    .digest();
  const given = Buffer.from(parts.get('v1') ?? '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('bad signature');
}

const FIND = `
  SELECT developers.id AS developer_id, apps.id AS app_id, apps.default_device_limit,
    (SELECT id FROM builds WHERE app_id = apps.id AND status = 'READY' ORDER BY completed_at DESC LIMIT 1) AS build_id
  FROM developers JOIN apps ON apps.developer_id = developers.id
  WHERE developers.payment_account_id = $1 AND apps.price_id = $2`;

const FULFIL = `
  WITH ev AS (INSERT INTO payment_events (id, type, outcome, received_at) VALUES ($1, $2, 'fulfilled', now()) ON CONFLICT DO NOTHING RETURNING id),
  lic AS (
    INSERT INTO licenses (id, developer_id, app_id, license_key, license_type, device_limit, email, source, payment_session_id, payment_session_hash)
    SELECT $3, $4, $5, $6, 'perpetual', $7, $8, 'direct_payment', $9, $10 FROM ev
    ON CONFLICT (payment_session_hash) WHERE payment_session_hash IS NOT NULL DO NOTHING RETURNING id),
  fee AS (
    INSERT INTO license_fees (license_id, developer_id, app_id, amount_cents, currency, source, charged_at, report_idempotency_key, report_status)
    SELECT id, $4, $5, 400, 'usd', 'direct_payment', now(), 'license_fee:' || id, 'not_reported' FROM lic RETURNING license_id),
  job AS (INSERT INTO jobs (kind, payload, max_attempts, run_after) SELECT 'report_license_fee', json_build_object('license_id', license_id), 12, 'infinity' FROM fee RETURNING 1)
  INSERT INTO email_outbox (id, developer_id, app_id, license_id, kind, recipient, subject, text_body, html_body, dedupe_key)
  SELECT $11, $4, $5, id, 'license_delivery', $8, 'Your license', $12, $12, 'license_delivery:' || id || ':' || $8 FROM lic
  RETURNING 1`;

serveBaseline(async ({ pool, body, headers }) => {
  verifySignature(String(headers['stripe-signature']), body);
  const event = JSON.parse(body);
  const res = await fetch(`${STRIPE_API_BASE}/v1/checkout/sessions/${event.data.object.id}?expand[]=line_items&expand[]=payment_link`, {
    headers: { authorization: `Bearer ${STRIPE_SECRET_KEY}`, 'stripe-account': event.account },
  });
  const session = await res.json();
  const { rows } = await pool.query(FIND, [event.account, session.line_items.data[0].price.id]);
  const app = rows[0];
  const licenseKey = randomBytes(16).toString('hex');
  const expires = Math.floor(Date.now() / 1000) + 7 * 86400;
  const link = `/v1/downloads/${app.build_id}?expires=${expires}&signature=${createHmac('sha256', linkKey).update(`${app.build_id}\n${expires}`).digest('base64url')}`;
  const hash = createHash('sha256').update(`checkout-session:${session.id}`).digest('hex');
  await pool.query(FULFIL, [
    event.id,
    event.type,
    `lic_${randomBytes(12).toString('hex')}`,
    app.developer_id,
    app.app_id,
    licenseKey,
    app.default_device_limit,
    session.customer_details.email,
    session.id.slice(-6),
    hash,
    `eml_${randomBytes(12).toString('hex')}`,
    `Key ${licenseKey}\nDownload ${link}`,
  ]);
  return { received: true };
});
