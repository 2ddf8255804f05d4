import { createHash, createHmac, randomBytes } from 'node:crypto';
import { serveBaseline } from './serve.js';

// What redeeming a code cannot do without: the code normalised and hashed, then one statement that
// claims the code if it is available, inserts the license, its fee and the fee's report job, and
// finds the newest READY build for an HMAC-signed link. No validation, no framework, no rate limit.
// Its fee's report job is queued never to come due ('infinity') and the fee recorded as not
// reported: the baseline never reports it, and Latchkey's job runner, on the same database, must
// not do that work for it (it did, counted against Latchkey, until the jobs were made never due).

const linkKey = randomBytes(32);

const REDEEM = `
  WITH claimed AS (
    UPDATE redemption_codes c SET status = 'redeemed', redeemed_at = now(), license_id = $2
    FROM redemption_batches b JOIN apps a ON a.id = b.app_id
    WHERE b.id = c.batch_id AND c.code_hash = $1 AND c.status = 'available' AND (b.codes_expire_at IS NULL OR b.codes_expire_at > now())
    RETURNING b.developer_id, b.app_id, a.name AS app_name, b.channel, b.device_limit, b.license_expiry_days, b.license_type, b.features),
  lic AS (
    INSERT INTO licenses (id, developer_id, app_id, license_key, license_type, device_limit, expires_at, features, source)
    SELECT $2, developer_id, app_id, $3, license_type, device_limit,
      CASE WHEN license_expiry_days > 0 THEN now() + license_expiry_days * interval '1 day' END, features, channel FROM claimed
    RETURNING id, developer_id, app_id, source, license_type),
  fee AS (
    INSERT INTO license_fees (license_id, developer_id, app_id, amount_cents, currency, source, charged_at, report_idempotency_key, report_status)
    SELECT id, developer_id, app_id, 400, 'usd', source, now(), 'license_fee:' || id, 'not_reported' FROM lic WHERE license_type <> 'trial' RETURNING license_id),
  job AS (INSERT INTO jobs (kind, payload, max_attempts, run_after) SELECT 'report_license_fee', json_build_object('license_id', license_id), 12, 'infinity' FROM fee RETURNING 1)
  SELECT claimed.app_name,
    (SELECT id FROM builds WHERE builds.app_id = claimed.app_id AND status = 'READY' ORDER BY completed_at DESC LIMIT 1) AS build_id
  FROM claimed`;

serveBaseline(async ({ pool, body }) => {
  const raw = String(JSON.parse(body).code)
    .toUpperCase()
    .replace(/[\s-]+/g, '');
  const code = `${raw.slice(0, 2)}-${raw.slice(2, 10)}-${raw.slice(10)}`;
  const hash = createHash('sha256').update(`redemption-code:${code}`).digest('hex');
  const licenseKey = randomBytes(8).toString('hex').toUpperCase().match(/.{4}/g)!.join('-');
  // Prepared (named) like Latchkey's statement: neither side parses and plans it on every request.
  const { rows } = await pool.query({ name: 'redeem', text: REDEEM, values: [hash, `lic_${randomBytes(12).toString('hex')}`, licenseKey] });
  const found = rows[0];
  if (!found) throw new Error('code not available');
  const expires = Math.floor(Date.now() / 1000) + 7 * 86400;
  const signature = createHmac('sha256', linkKey).update(`${found.build_id}\n${expires}`).digest('base64url');
  return { license_key: licenseKey, app_name: found.app_name, download_url: `/v1/downloads/${found.build_id}?expires=${expires}&signature=${signature}` };
});
