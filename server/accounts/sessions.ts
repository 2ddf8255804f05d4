import type { Clock } from '../clock.js';
import { newId, randomHex, randomSecret, safeEqual, sha256Hex } from '../crypto/secrets.js';
import type { Db } from '../db/knex.js';
import { assertThat } from '../errors.js';
import type { CredentialCache } from './credential-cache.js';
import type { AccountsStore } from './store.js';
import type { SessionTokens } from './tokens.js';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;

// A refresh token carries its lookup id beside the secret, so verification is one indexed read plus
// a constant-time comparison of hashes: `rt_<id>_<secret>`.
const REFRESH_TOKEN = /^rt_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/;

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  token_type: 'bearer';
  expires_in: number;
}

/**
 * Sign-in sessions: a login starts one (a refresh-token family, `fam_...`), its refresh tokens
 * rotate within it, and its access tokens name it. Ending a session revokes its refresh tokens,
 * deletes the portal sessions signed in with it and stops its access tokens on every server
 * process before the ending answers (credential-cache.ts).
 */
export function createSessions(deps: { store: AccountsStore; clock: Clock; tokens: SessionTokens; cache: CredentialCache<string> }) {
  const { store, clock, tokens, cache } = deps;

  async function issueTokenPair(developerId: string, sessionId = newId('fam')): Promise<TokenPair> {
    const refreshId = randomHex(12);
    const secret = randomSecret(32);
    await store.insertRefreshToken({
      id: refreshId,
      family_id: sessionId,
      developer_id: developerId,
      secret_hash: sha256Hex(secret),
      expires_at: new Date(clock.now().getTime() + REFRESH_TOKEN_TTL_SECONDS * 1000),
    });
    return {
      access_token: tokens.issue(developerId, 'access', clock.now().getTime(), ACCESS_TOKEN_TTL_SECONDS, sessionId),
      refresh_token: `rt_${refreshId}_${secret}`,
      token_type: 'bearer',
      expires_in: ACCESS_TOKEN_TTL_SECONDS,
    };
  }

  return {
    /** Starts a session: its first token pair. */
    start: (developerId: string) => issueTokenPair(developerId),

    /** Rotates the refresh token; presenting an already-rotated one ends its whole session (theft signal). */
    async refresh(refreshToken: string): Promise<TokenPair> {
      const m = REFRESH_TOKEN.exec(refreshToken);
      assertThat(m, 'INVALID_REFRESH_TOKEN', 'The refresh token is invalid');
      const [, id, secret] = m;
      const outcome = await store.transaction(async (trx) => {
        const row = await store.lockRefreshToken(trx, id!);
        if (!row || !safeEqual(row.secret_hash, sha256Hex(secret!))) return { kind: 'invalid' as const };
        if (row.revoked_at || row.expires_at.getTime() <= clock.now().getTime()) return { kind: 'invalid' as const };
        if (row.rotated_at) return { kind: 'reused' as const, session: row.family_id };
        await store.markRotated(trx, row.id);
        return { kind: 'ok' as const, row };
      });
      if (outcome.kind === 'reused') {
        const ended = await store.transaction((trx) => store.endSessions(trx, { session: outcome.session }));
        await cache.awaitDropped(ended);
      }
      assertThat(outcome.kind === 'ok', 'INVALID_REFRESH_TOKEN', 'The refresh token is invalid, expired or already used');
      return issueTokenPair(outcome.row.developer_id, outcome.row.family_id);
    },

    /** The developer and session of a valid, unexpired access token whose session has not ended, else null. */
    async verifyAccessToken(token: string): Promise<{ developerId: string; sessionId: string } | null> {
      const verified = tokens.verify(token, 'access', clock.now().getTime());
      // Tokens issued before sessions were named have no session to check: they are refused (the client refreshes).
      if (!verified?.sid) return null;
      const sessionId = verified.sid;
      let owner = cache.lookup(sessionId, '');
      if (owner === undefined) {
        const lookupGeneration = cache.generation();
        owner = await store.liveSessionOwner(sessionId);
        if (!owner) return null;
        cache.remember(sessionId, owner, '', lookupGeneration);
      }
      return owner === verified.sub ? { developerId: owner, sessionId } : null;
    },

    /**
     * Ends the developer's sessions in `trx` (all of them, or all but `except`); call the answer
     * after the commit: it returns once no server process accepts their access tokens any more.
     */
    async end(trx: Db, developerId: string, except?: string): Promise<() => Promise<void>> {
      const ended = await store.endSessions(trx, { developer: developerId, except });
      return () => cache.awaitDropped(ended);
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
