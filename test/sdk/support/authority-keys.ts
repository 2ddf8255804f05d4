import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { assembleJws, DOCUMENT_TYPES, signingInput, type Ed25519PublicJwk, type RuntimeTokenClaims, type UpdateManifestClaims } from '../../../runtime-sdk/protocol.js';

/** An Ed25519 key pair signing runtime tokens the way the authority does (node:crypto + protocol helpers). */
export class TestSigner {
  readonly publicJwk: Ed25519PublicJwk;
  private readonly privateKey: KeyObject;

  constructor(readonly kid = `k_${Math.random().toString(36).slice(2, 10)}`) {
    const pair = generateKeyPairSync('ed25519');
    this.privateKey = pair.privateKey;
    const jwk = pair.publicKey.export({ format: 'jwk' }) as { x: string };
    this.publicJwk = { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid, alg: 'EdDSA', use: 'sig' };
  }

  sign(claims: RuntimeTokenClaims, header: Record<string, unknown> = {}): string {
    return this.signDocument(DOCUMENT_TYPES.runtimeToken, claims, header);
  }

  signManifest(claims: UpdateManifestClaims | Record<string, unknown>, header: Record<string, unknown> = {}): string {
    return this.signDocument(DOCUMENT_TYPES.updateManifest, claims, header);
  }

  private signDocument(typ: string, claims: object, header: Record<string, unknown>): string {
    const input = signingInput({ alg: 'EdDSA', kid: this.kid, typ, ...header } as never, claims);
    return assembleJws(input, sign(null, Buffer.from(input, 'ascii'), this.privateKey));
  }
}

export function runtimeClaims(overrides: Partial<RuntimeTokenClaims> & { iat: number }): RuntimeTokenClaims {
  const graceHours = overrides.policy?.offline_grace_hours ?? 72;
  return {
    iss: 'latchkey',
    sub: 'lic_test',
    app_id: 'app_test',
    device: 'f'.repeat(64),
    license_type: 'perpetual',
    features: { tier: 'pro' },
    policy: { device_limit: 2, offline_grace_hours: graceHours },
    license_expires_at: null,
    exp: overrides.iat + graceHours * 3600,
    ...overrides,
  };
}
