import { createHmac } from 'node:crypto';
import { randomHex, safeEqual } from '../crypto/secrets.js';

/**
 * Developer access tokens and 2FA login challenges: compact JWS with HS256 under a key derived from
 * the master key. An access token names its sign-in session (`sid`: the login's refresh-token
 * family), which ending the session revokes; whether a session is live is remembered per process
 * (credential-cache.ts), so a request costs no lookup most of the time. A challenge that was tried
 * is recorded (by its hash), so that it takes few codes and completes one login.
 */
export type TokenUse = 'access' | '2fa_challenge';

interface Claims {
  sub: string;
  use: TokenUse;
  /** Random, so no two tokens are alike: a used 2FA challenge is recorded by its hash. */
  jti: string;
  iat: number;
  exp: number;
  /** Access tokens: the sign-in session. */
  sid?: string;
}

export interface VerifiedToken {
  sub: string;
  sid: string | undefined;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export class SessionTokens {
  constructor(private readonly key: Buffer) {}

  issue(sub: string, use: TokenUse, nowMs: number, ttlSeconds: number, sessionId?: string): string {
    const iat = Math.floor(nowMs / 1000);
    const claims: Claims = { sub, use, jti: randomHex(12), iat, exp: iat + ttlSeconds, ...(sessionId ? { sid: sessionId } : {}) };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${HEADER}.${payload}.${this.mac(`${HEADER}.${payload}`)}`;
  }

  /** The subject (and session) of a valid, unexpired token of the expected use, else null. */
  verify(token: string, use: TokenUse, nowMs: number): VerifiedToken | null {
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
    if (claims.exp * 1000 <= nowMs) return null;
    return { sub: claims.sub, sid: typeof claims.sid === 'string' ? claims.sid : undefined };
  }

  private mac(input: string): string {
    return createHmac('sha256', this.key).update(input).digest('base64url');
  }
}

/**
 * The sign-in session an access token names, read without verifying it: for the portal, which
 * holds tokens this server issued to it, to record which session a portal session signs in with.
 */
export function sessionIdOfAccessToken(token: string): string | null {
  try {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Partial<Claims>;
    return typeof claims.sid === 'string' ? claims.sid : null;
  } catch {
    return null;
  }
}
