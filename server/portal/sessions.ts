import { createHmac } from 'node:crypto';
import type Koa from 'koa';
import { sessionIdOfAccessToken } from '../accounts/tokens.js';
import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { randomSecret, safeEqual, sha256Hex } from '../crypto/secrets.js';
import type { Db } from '../db/knex.js';
import { RequestError } from '../errors.js';
import type { Upstream } from './upstream.js';

/** A session unused this long ends; however used, it ends after SESSION_MAX_MS. */
export const SESSION_IDLE_MS = 8 * 3600_000;
export const SESSION_MAX_MS = 7 * 86_400_000;
/** The access token is refreshed this long before it expires. */
const REFRESH_MARGIN_MS = 60_000;
/** The idle expiry is pushed forward at most this often (one write per few minutes, not per request). */
const TOUCH_EVERY_MS = 5 * 60_000;
/** The 2FA step of a sign-in must follow its password step within the API's challenge lifetime. */
const CHALLENGE_COOKIE_MS = 5 * 60_000;

export const COOKIE = { session: 'lk_portal', pre: 'lk_portal_pre', challenge: 'lk_portal_2fa' } as const;
const COOKIE_PATH = '/portal';

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

interface SessionRow {
  id_hash: string;
  developer_id: string;
  access_token_sealed: string;
  refresh_token_sealed: string;
  access_expires_at: Date;
  expires_at: Date;
  absolute_expires_at: Date;
}

export interface PortalSession {
  idHash: string;
  developerId: string;
  csrfToken: string;
}

/**
 * Portal sessions: the browser holds a random id (HttpOnly cookie); PostgreSQL holds its SHA-256
 * and the API token pair sealed under the master key, so any server process can serve any session.
 * CSRF tokens are HMACs of the session id (or, before sign-in, of a random pre-session nonce) under
 * a key derived from the master key: per session, unforgeable, nothing more to store.
 */
export function createPortalSessions(deps: { db: Db; clock: Clock; masterKey: MasterKey; upstream: Upstream }) {
  const { db, clock, masterKey, upstream } = deps;
  const csrfKey = masterKey.derive('portal-csrf');
  const csrfFor = (kind: 'session' | 'pre', id: string) => createHmac('sha256', csrfKey).update(`${kind}:${id}`).digest('base64url');
  const aad = (idHash: string, which: 'access' | 'refresh') => `portal_session:${idHash}:${which}`;

  function cookieOptions(ctx: Koa.Context, maxAgeMs?: number) {
    // Secure over TLS (X-Forwarded-Proto only from a proxy LATCHKEY_TRUST_PROXY lists), and always when the public address is https (http/public-https.ts).
    return { path: COOKIE_PATH, httpOnly: true, sameSite: 'lax' as const, secure: ctx.cookies.secure, overwrite: true, ...(maxAgeMs ? { maxAge: maxAgeMs } : {}) };
  }
  const clearCookie = (ctx: Koa.Context, name: string) => ctx.cookies.set(name, '', { ...cookieOptions(ctx), maxAge: 0, expires: new Date(0) });

  async function load(sessionId: string): Promise<SessionRow | undefined> {
    const now = clock.now();
    const row = await db<SessionRow>('portal_sessions')
      .where({ id_hash: sha256Hex(sessionId) })
      .first();
    if (!row || row.expires_at <= now || row.absolute_expires_at <= now) return undefined;
    if (row.expires_at.getTime() - now.getTime() < SESSION_IDLE_MS - TOUCH_EVERY_MS) {
      const expires = new Date(Math.min(now.getTime() + SESSION_IDLE_MS, row.absolute_expires_at.getTime()));
      await db('portal_sessions').where({ id_hash: row.id_hash }).update({ expires_at: expires });
    }
    return row;
  }

  return {
    csrfFor,

    /** The signed-in session of the request, or null. */
    async current(ctx: Koa.Context): Promise<PortalSession | null> {
      const id = ctx.cookies.get(COOKIE.session);
      if (!id || id.length > 100) return null;
      const row = await load(id);
      return row ? { idHash: row.id_hash, developerId: row.developer_id, csrfToken: csrfFor('session', id) } : null;
    },

    /** The pre-session nonce (for the CSRF token of the sign-in forms), set when missing. */
    preSession(ctx: Koa.Context): string {
      let nonce = ctx.cookies.get(COOKIE.pre);
      if (!nonce || nonce.length > 100) {
        nonce = randomSecret(24);
        ctx.cookies.set(COOKIE.pre, nonce, cookieOptions(ctx));
      }
      return nonce;
    },

    /** Whether the request's X-CSRF-Token matches its session (or pre-session), in constant time. */
    csrfValid(ctx: Koa.Context, session: PortalSession | null): boolean {
      const given = ctx.get('x-csrf-token');
      if (!given) return false;
      if (session) return safeEqual(given, session.csrfToken);
      const nonce = ctx.cookies.get(COOKIE.pre);
      return Boolean(nonce) && safeEqual(given, csrfFor('pre', nonce!));
    },

    /** Signs in: a fresh session id (never one the browser had before) holding the sealed token pair. */
    async create(ctx: Koa.Context, developerId: string, tokens: TokenPair): Promise<string> {
      const now = clock.now().getTime();
      const id = randomSecret(32);
      const idHash = sha256Hex(id);
      const old = ctx.cookies.get(COOKIE.session);
      if (old)
        await db('portal_sessions')
          .where({ id_hash: sha256Hex(old) })
          .delete();
      // Sessions nobody signed out of are removed here rather than by a timer.
      await db('portal_sessions').where('expires_at', '<', new Date(now)).delete();
      await db('portal_sessions').insert({
        id_hash: idHash,
        developer_id: developerId,
        // Ending that API session (a password change elsewhere, 2FA turned on) deletes this row too.
        session_id: sessionIdOfAccessToken(tokens.access_token),
        access_token_sealed: masterKey.seal(tokens.access_token, aad(idHash, 'access')),
        refresh_token_sealed: masterKey.seal(tokens.refresh_token, aad(idHash, 'refresh')),
        access_expires_at: new Date(now + tokens.expires_in * 1000),
        expires_at: new Date(now + SESSION_IDLE_MS),
        absolute_expires_at: new Date(now + SESSION_MAX_MS),
      });
      ctx.cookies.set(COOKIE.session, id, cookieOptions(ctx, SESSION_MAX_MS));
      clearCookie(ctx, COOKIE.pre);
      clearCookie(ctx, COOKIE.challenge);
      return csrfFor('session', id);
    },

    async destroy(ctx: Koa.Context): Promise<void> {
      const id = ctx.cookies.get(COOKIE.session);
      if (id)
        await db('portal_sessions')
          .where({ id_hash: sha256Hex(id) })
          .delete();
      clearCookie(ctx, COOKIE.session);
      clearCookie(ctx, COOKIE.challenge);
    },

    /** The 2FA challenge between the two sign-in steps: sealed in a short-lived cookie, bound to the pre-session. */
    holdChallenge(ctx: Koa.Context, challengeToken: string): void {
      const nonce = this.preSession(ctx);
      ctx.cookies.set(COOKIE.challenge, masterKey.seal(challengeToken, `portal_2fa:${nonce}`), cookieOptions(ctx, CHALLENGE_COOKIE_MS));
    },

    heldChallenge(ctx: Koa.Context): string | null {
      const sealed = ctx.cookies.get(COOKIE.challenge);
      const nonce = ctx.cookies.get(COOKIE.pre);
      if (!sealed || !nonce) return null;
      try {
        return masterKey.open(sealed, `portal_2fa:${nonce}`);
      } catch {
        return null;
      }
    },

    dropChallenge: (ctx: Koa.Context) => clearCookie(ctx, COOKIE.challenge),

    /**
     * The session's access token, refreshed through POST /v1/auth/refresh when it is about to
     * expire. Refresh tokens are single use and reusing one revokes the whole login, so the
     * refresh runs under the session row's lock: concurrent requests wait and use its result.
     */
    async accessToken(ctx: Koa.Context, session: PortalSession): Promise<string> {
      const fresh = (row: SessionRow) => row.access_expires_at.getTime() - REFRESH_MARGIN_MS > clock.now().getTime();
      const row = await db<SessionRow>('portal_sessions').where({ id_hash: session.idHash }).first();
      if (!row) throw signedOut();
      if (fresh(row)) return masterKey.open(row.access_token_sealed, aad(row.id_hash, 'access'));
      return db.transaction(async (trx) => {
        const locked = await trx<SessionRow>('portal_sessions').where({ id_hash: session.idHash }).forUpdate().first();
        if (!locked) throw signedOut();
        if (fresh(locked)) return masterKey.open(locked.access_token_sealed, aad(locked.id_hash, 'access'));
        const refreshToken = masterKey.open(locked.refresh_token_sealed, aad(locked.id_hash, 'refresh'));
        const answer = await upstream.json(ctx, 'POST', '/v1/auth/refresh', { refresh_token: refreshToken });
        if (answer.status === 401) {
          await trx('portal_sessions').where({ id_hash: locked.id_hash }).delete();
          throw signedOut();
        }
        if (answer.status !== 200) throw new RequestError('SERVICE_UNAVAILABLE', 'The portal could not renew its access token; retry shortly');
        const tokens = answer.body as TokenPair;
        await trx('portal_sessions')
          .where({ id_hash: locked.id_hash })
          .update({
            access_token_sealed: masterKey.seal(tokens.access_token, aad(locked.id_hash, 'access')),
            refresh_token_sealed: masterKey.seal(tokens.refresh_token, aad(locked.id_hash, 'refresh')),
            access_expires_at: new Date(clock.now().getTime() + tokens.expires_in * 1000),
          });
        return tokens.access_token;
      });
    },
  };
}

export type PortalSessions = ReturnType<typeof createPortalSessions>;

export const signedOut = () => new RequestError('UNAUTHORIZED', 'Your portal session has ended: sign in again');
