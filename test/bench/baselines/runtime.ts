import { generateKeyPairSync, sign } from 'node:crypto';
import { serveBaseline } from './serve.js';

// What activation and refresh cannot do without: one statement (insert the device; read the
// license while touching the device) and one Ed25519 signature of a token like Latchkey's.
// No validation, rate limits, velocity or slot accounting, no framework.

const { privateKey } = generateKeyPairSync('ed25519');
const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'latchkey-runtime+jwt', kid: 'baseline' })).toString('base64url');

interface LicenseRow {
  id: string;
  app_id: string;
  license_type: string;
  features: unknown;
  device_limit: number;
}

function tokenFor(license: LicenseRow, device: string) {
  const iat = Math.floor(Date.now() / 1000);
  const exp = iat + 72 * 3600;
  const policy = { device_limit: license.device_limit, offline_grace_hours: 72 };
  const claims = { iss: 'latchkey', sub: license.id, app_id: license.app_id, device, license_type: license.license_type, features: license.features, policy, iat, exp };
  const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const signature = sign(null, Buffer.from(input), privateKey).toString('base64url');
  return { token: `${input}.${signature}`, expires_at: new Date(exp * 1000).toISOString(), policy };
}

const ACTIVATE = `
  WITH lic AS (SELECT * FROM licenses WHERE license_key = $1),
  added AS (INSERT INTO devices (license_id, fingerprint_hash, first_seen_at, last_seen_at) SELECT id, $2, now(), now() FROM lic RETURNING 1)
  SELECT lic.*, EXISTS (SELECT 1 FROM added) AS added FROM lic`;

const REFRESH = `
  WITH touched AS (UPDATE devices SET last_seen_at = now() WHERE license_id = $1 AND fingerprint_hash = $2 RETURNING 1)
  SELECT licenses.*, EXISTS (SELECT 1 FROM touched) AS device_known FROM licenses WHERE id = $1`;

serveBaseline(async ({ pool, path, body }) => {
  const input = JSON.parse(body);
  if (path === '/v1/licenses/activate') {
    const { rows } = await pool.query<LicenseRow>(ACTIVATE, [input.license_key, input.device_fingerprint]);
    return tokenFor(rows[0]!, input.device_fingerprint);
  }
  // The token's claims are taken as they are: checking its signature is Latchkey's extra work.
  const claims = JSON.parse(Buffer.from(input.token.split('.')[1], 'base64url').toString());
  const { rows } = await pool.query<LicenseRow>(REFRESH, [claims.sub, claims.device]);
  return tokenFor(rows[0]!, claims.device);
});
