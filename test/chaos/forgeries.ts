import { createHmac, generateKeyPairSync, sign } from 'node:crypto';

/**
 * Forged variants of a genuine compact JWS (a runtime token or an update manifest): what an attacker
 * on the wire, or with the token cache in hand, can make of it. None may be accepted.
 */
export interface Forgery {
  kind: string;
  jws: string;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');
const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
const foreignKey = generateKeyPairSync('ed25519').privateKey;

function altered(value: unknown): unknown {
  if (typeof value === 'string') return value.length > 0 ? `${value.slice(0, -1)}${value.endsWith('0') ? '1' : '0'}` : 'x';
  if (typeof value === 'number') return value + 86_400 * 365;
  if (typeof value === 'boolean') return !value;
  if (value === null) return 4_102_444_800;
  if (Array.isArray(value)) return [...value, 'x'];
  return { ...(value as object), tier: 'enterprise', seats: 9999 };
}

export function forgeriesOf(genuine: string, publicKeyX: string, otherType: string): Forgery[] {
  const [h, c, s] = genuine.split('.') as [string, string, string];
  const header = decode(h);
  const claims = decode(c);
  const forgeries: Forgery[] = [];
  const resigned = (hdr: Record<string, unknown>, cl: Record<string, unknown>) => {
    const input = `${b64url(JSON.stringify(hdr))}.${b64url(JSON.stringify(cl))}`;
    return `${input}.${b64url(sign(null, Buffer.from(input), foreignKey))}`;
  };

  for (const name of Object.keys(claims)) {
    const changed = { ...claims, [name]: altered(claims[name]) };
    // Altered claims under the genuine signature, and re-signed by a key that is not pinned (but names the pinned kid).
    forgeries.push({ kind: `claim ${name} altered`, jws: `${h}.${b64url(JSON.stringify(changed))}.${s}` });
    forgeries.push({ kind: `claim ${name} altered, re-signed`, jws: resigned(header, changed) });
    const { [name]: _dropped, ...without } = claims;
    forgeries.push({ kind: `claim ${name} removed, re-signed`, jws: resigned(header, without) });
  }
  forgeries.push({ kind: 're-signed by another key', jws: resigned(header, claims) });
  forgeries.push({ kind: 're-signed by another key and kid', jws: resigned({ ...header, kid: 'attacker' }, claims) });

  // alg swaps: none, HMAC keyed with the public key, other algorithms, case games.
  for (const alg of ['none', 'None', 'HS256', 'RS256', 'ES256', 'eddsa', 'EdDSA ', '', 'Ed25519']) {
    const hdr = b64url(JSON.stringify({ ...header, alg }));
    forgeries.push({ kind: `alg ${JSON.stringify(alg)}, genuine signature`, jws: `${hdr}.${c}.${s}` });
    forgeries.push({ kind: `alg ${JSON.stringify(alg)}, no signature`, jws: `${hdr}.${c}.` });
  }
  for (const secret of [publicKeyX, Buffer.from(publicKeyX, 'base64url')]) {
    const hdr = b64url(JSON.stringify({ ...header, alg: 'HS256' }));
    const mac = createHmac('sha256', secret).update(`${hdr}.${c}`).digest();
    forgeries.push({ kind: 'alg HS256 keyed with the public key', jws: `${hdr}.${c}.${b64url(mac)}` });
  }
  forgeries.push({ kind: 'other document type', jws: resigned({ ...header, typ: otherType }, claims) });
  forgeries.push({ kind: 'typ swapped, genuine signature', jws: `${b64url(JSON.stringify({ ...header, typ: otherType }))}.${c}.${s}` });
  forgeries.push({ kind: 'kid removed', jws: `${b64url(JSON.stringify({ alg: header.alg, typ: header.typ }))}.${c}.${s}` });
  forgeries.push({ kind: 'header with jwk embedded', jws: `${b64url(JSON.stringify({ ...header, jwk: { kty: 'OKP', crv: 'Ed25519', x: publicKeyX } }))}.${c}.${s}` });

  // Signature bit flips, and the token cut short at many points.
  const signature = Buffer.from(s, 'base64url');
  for (let byte = 0; byte < signature.length; byte += 4) {
    const flipped = Buffer.from(signature);
    flipped[byte]! ^= 0x01;
    forgeries.push({ kind: `signature byte ${byte} flipped`, jws: `${h}.${c}.${b64url(flipped)}` });
  }
  for (let cut = 1; cut < genuine.length; cut += Math.max(1, Math.floor(genuine.length / 40))) {
    forgeries.push({ kind: `truncated to ${cut} characters`, jws: genuine.slice(0, cut) });
  }
  forgeries.push({ kind: 'extra segment', jws: `${genuine}.${s}` });
  forgeries.push({ kind: 'whitespace inside', jws: `${h}.${c} .${s}` });
  forgeries.push({ kind: 'padding added', jws: `${h}=.${c}.${s}` });
  return forgeries;
}
