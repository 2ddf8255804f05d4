import { generateKeyPairSync, sign } from 'node:crypto';
import { serveBaseline } from './serve.js';

// What a floating license's heartbeat cannot do without: one UPDATE of the device's lease row
// (renewed while live) and one Ed25519 signature of a token that lives until the lease's end.
// No validation, signature check of the presented token, rate limits or license rules, no framework.

const { privateKey } = generateKeyPairSync('ed25519');
const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'latchkey-runtime+jwt', kid: 'baseline' })).toString('base64url');

const RENEW = `
  UPDATE license_leases SET expires_at = date_trunc('second', now() + interval '15 minutes')
  WHERE license_id = $1 AND fingerprint_hash = $2 AND expires_at > now() RETURNING expires_at`;

serveBaseline(async ({ pool, body }) => {
  // The token's claims are taken as they are: checking its signature is Latchkey's extra work.
  const presented = JSON.parse(Buffer.from(JSON.parse(body).token.split('.')[1], 'base64url').toString());
  const { rows } = await pool.query<{ expires_at: Date }>(RENEW, [presented.sub, presented.device]);
  const exp = Math.floor(rows[0]!.expires_at.getTime() / 1000);
  const claims = { ...presented, iat: Math.floor(Date.now() / 1000), exp };
  const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const signature = sign(null, Buffer.from(input), privateKey).toString('base64url');
  return { token: `${input}.${signature}`, expires_at: new Date(exp * 1000).toISOString(), policy: presented.policy };
});
