import { generateKeyPairSync, sign } from 'node:crypto';
import { serveBaseline } from './serve.js';

// What an update check cannot do without: one statement (find the license, record the device's
// launch, read the app's push and its build) and one Ed25519 signature of a manifest like
// Latchkey's. No validation, rate limits, platform or engine rules, signed link, no framework.

const { privateKey } = generateKeyPairSync('ed25519');
const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'latchkey-update-manifest+jwt', kid: 'baseline' })).toString('base64url');

const CHECK = `
  WITH lic AS (SELECT id, app_id FROM licenses WHERE license_key = $1),
  touched AS (
    UPDATE devices SET last_seen_at = now(), platform = $3, engine_version = $4, app_version = $5
    WHERE license_id = (SELECT id FROM lic) AND fingerprint_hash = $2 RETURNING 1)
  SELECT lic.id AS license_id, lic.app_id, EXISTS (SELECT 1 FROM touched) AS device_known,
    p.build_id, p.release_notes, p.serial, builds.version, builds.sha256, builds.protected_size_bytes
  FROM lic JOIN app_pushes p ON p.app_id = lic.app_id JOIN builds ON builds.id = p.build_id`;

interface CheckRow {
  license_id: string;
  app_id: string;
  build_id: string;
  release_notes: string;
  serial: number;
  version: string;
  sha256: string;
  protected_size_bytes: number;
}

serveBaseline(async ({ pool, body }) => {
  const input = JSON.parse(body);
  const { rows } = await pool.query<CheckRow>(CHECK, [input.license_key, input.device_fingerprint, input.platform, input.engine_version, input.version]);
  const row = rows[0]!;
  const iat = Math.floor(Date.now() / 1000);
  const claims = {
    iss: 'latchkey',
    sub: row.license_id,
    app_id: row.app_id,
    platform: input.platform,
    device: input.device_fingerprint,
    build_id: row.build_id,
    version: row.version,
    sha256: row.sha256,
    length: Number(row.protected_size_bytes),
    url: `http://127.0.0.1/v1/downloads/${row.build_id}`,
    release_notes: row.release_notes,
    serial: Number(row.serial),
    iat,
    exp: iat + 1800,
  };
  const signingInput = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return { manifest: `${signingInput}.${sign(null, Buffer.from(signingInput), privateKey).toString('base64url')}` };
});
