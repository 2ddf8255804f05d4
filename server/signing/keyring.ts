import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { assembleJws, signingInput, verifyJws, type DocumentType, type Ed25519PublicJwk, type JwkSet, type JwsHeader } from '@latchkey/runtime-sdk/protocol';

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: Ed25519PublicJwk;
}

/** RFC 7638 thumbprint: SHA-256 over the required members in lexicographic order, base64url. */
function thumbprint(x: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url');
}

function assertEd25519(privateKey: KeyObject): void {
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new Error(`expected an Ed25519 private key, got ${privateKey.asymmetricKeyType ?? 'a non-asymmetric key'}`);
  }
}

function toSigningKey(privateKey: KeyObject): SigningKey {
  assertEd25519(privateKey);
  const publicKey = createPublicKey(privateKey);
  const { x } = publicKey.export({ format: 'jwk' });
  const kid = thumbprint(x!);
  return { kid, privateKey, publicKey, jwk: { kty: 'OKP', crv: 'Ed25519', x: x!, kid, alg: 'EdDSA', use: 'sig' } };
}

/**
 * The authority's Ed25519 keys. The first signs; the others stay published (and accepted) so
 * documents signed before a rotation keep verifying until they age out.
 */
export class Keyring {
  private readonly active: SigningKey;
  private readonly byKid: Map<string, SigningKey>;
  /** The public JWK Set served at `GET /v1/public/keys`. */
  readonly jwks: JwkSet;

  constructor(privateKeys: KeyObject[]) {
    const keys = privateKeys.map(toSigningKey);
    if (keys.length === 0) throw new Error('a keyring needs at least one signing key');
    this.active = keys[0]!;
    this.byKid = new Map(keys.map((k) => [k.kid, k]));
    this.jwks = { keys: keys.map((k) => k.jwk) };
  }

  /** A compact JWS of `claims`, typed `typ`, signed by the active key with node:crypto. */
  sign(typ: DocumentType, claims: object): string {
    const header: JwsHeader = { alg: 'EdDSA', kid: this.active.kid, typ };
    const input = signingInput(header, claims);
    return assembleJws(input, sign(null, Buffer.from(input), this.active.privateKey));
  }

  /**
   * Checks a document this authority signed, with the protocol's own rules; the signature check
   * uses the key objects held here, looked up by `kid`.
   */
  verify<T>(compact: string, typ: DocumentType): T {
    return verifyJws<T>(compact, this.jwks, typ, (input, signature, jwk) => {
      const key = this.byKid.get(jwk.kid);
      return key !== undefined && verify(null, input, key.publicKey, signature);
    }).claims;
  }
}

export function generateSigningKey(): KeyObject {
  return generateKeyPairSync('ed25519').privateKey;
}

export function signingKeyToPem(key: KeyObject): string {
  return key.export({ format: 'pem', type: 'pkcs8' }).toString();
}

const PEM_BLOCK = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/g;

/**
 * Ed25519 private keys from text: PKCS#8 PEM blocks, or base64 PKCS#8 DER values separated by
 * commas (one line, as environment variables prefer). The first key is the active signer.
 */
export function parseSigningKeys(text: string): KeyObject[] {
  const pems = text.match(PEM_BLOCK);
  const keys = pems
    ? pems.map((pem) => createPrivateKey({ key: pem, format: 'pem' }))
    : text
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part.length > 0)
        .map((der) => createPrivateKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'pkcs8' }));
  if (keys.length === 0) throw new Error('no key found');
  keys.forEach(assertEd25519);
  return keys;
}
