import { createHmac } from 'node:crypto';
import { randomHex, safeEqual } from '../crypto/secrets.js';

/**
 * Developer access tokens and 2FA login challenges: compact JWS with HS256 under a key derived from
 * the master key. Stateless, so a request with an access token costs no database lookup; only a
 * challenge that completed a login is recorded (by its hash), so that it completes no other.
 */
export type TokenUse = 'access' | '2fa_challenge';

interface Claims {
  sub: string;
  use: TokenUse;
  /** Random, so no two tokens are alike: a used 2FA challenge is recorded by its hash. */
  jti: string;
  iat: number;
  exp: number;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export class SessionTokens {
  constructor(private readonly key: Buffer) {}

  issue(sub: string, use: TokenUse, nowMs: number, ttlSeconds: number): string {
    const iat = Math.floor(nowMs / 1000);
    const claims: Claims = { sub, use, jti: randomHex(12), iat, exp: iat + ttlSeconds };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${HEADER}.${payload}.${this.mac(`${HEADER}.${payload}`)}`;
  }

  /** The subject of a valid, unexpired token of the expected use, else null. */
  verify(token: string, use: TokenUse, nowMs: number): string | null {
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== HEADER) return null;
    if (!safeEqual(parts[2]!, this.mac(`${parts[0]}.${parts[1]}`))) return null;
    let claims: Partial<Claims>;
    try {
      claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Partial<Claims>;
    } catch {
      return null;
    }
    if (claims.use !== use || typeof claims.sub !== 'string' || typeof claims.exp !== 'number') return null;
    return claims.exp * 1000 > nowMs ? claims.sub : null;
  }

  private mac(input: string): string {
    return createHmac('sha256', this.key).update(input).digest('base64url');
  }
}
