import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { DUMMY_PASSWORD_HASH, hashPassword, newId, randomHex, randomHumanCode, randomSecret, safeEqual, sha256Hex, verifyPassword } from '../crypto/secrets.js';
import { isUniqueViolation } from '../db/knex.js';
import type { EmailOutbox } from '../email/outbox.js';
import { RequestError, assertThat } from '../errors.js';
import type { ApiKeyCache } from './api-key-cache.js';
import { createSecondFactor, normaliseBackupCode, totpAad, WRONG_CODE_DETAIL } from './second-factor.js';
import type { AccountsStore, DeveloperRow } from './store.js';
import { SessionTokens } from './tokens.js';
import { totp } from './totp.js';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;
export const CHALLENGE_TTL_SECONDS = 300;
/** Codes one login challenge may be tried with; the next attempt is refused whatever its code, and the login starts again. */
export const CHALLENGE_MAX_ATTEMPTS = 5;
const CHALLENGE_REFUSED_DETAIL = 'The login challenge is invalid, expired or already used; log in again';
const BACKUP_CODE_COUNT = 10;

// Credentials carry their lookup id beside the secret, so verification is one indexed read plus a
// constant-time comparison of hashes: `lk_<id>_<secret>`, `rt_<id>_<secret>`.
const API_KEY = /^lk_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/;
const REFRESH_TOKEN = /^rt_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/;

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  token_type: 'bearer';
  expires_in: number;
}

export interface AccountsDeps {
  store: AccountsStore;
  clock: Clock;
  masterKey: MasterKey;
  apiKeys: ApiKeyCache;
  /** Notices about the account's security (a 2FA lockout) go through the outbox. */
  outbox: Pick<EmailOutbox, 'queueAccountEmail'>;
  wakeJobs: () => void;
  publicBaseUrl: string;
}

export function createAccountsService(deps: AccountsDeps) {
  const { store, clock, masterKey, apiKeys } = deps;
  const tokens = new SessionTokens(masterKey.derive('session-tokens'));
  const secondFactor = createSecondFactor(deps);

  async function issueTokenPair(developerId: string, familyId = newId('fam')): Promise<TokenPair> {
    const refreshId = randomHex(12);
    const secret = randomSecret(32);
    await store.insertRefreshToken({
      id: refreshId,
      family_id: familyId,
      developer_id: developerId,
      secret_hash: sha256Hex(secret),
      expires_at: new Date(clock.now().getTime() + REFRESH_TOKEN_TTL_SECONDS * 1000),
    });
    return {
      access_token: tokens.issue(developerId, 'access', clock.now().getTime(), ACCESS_TOKEN_TTL_SECONDS),
      refresh_token: `rt_${refreshId}_${secret}`,
      token_type: 'bearer',
      expires_in: ACCESS_TOKEN_TTL_SECONDS,
    };
  }

  async function requireDeveloper(id: string): Promise<DeveloperRow> {
    const dev = await store.findDeveloper(id);
    assertThat(dev, 'UNAUTHORIZED', 'The account no longer exists');
    return dev;
  }

  return {
    async register(input: { email: string; password: string; company_name: string }) {
      try {
        return await store.insertDeveloper({
          id: newId('dev'),
          email: input.email,
          password_hash: await hashPassword(input.password),
          company_name: input.company_name,
        });
      } catch (err) {
        if (isUniqueViolation(err, 'developers_email_key')) {
          throw new RequestError('EMAIL_IN_USE', 'An account with this email already exists');
        }
        throw err;
      }
    },

    async login(email: string, password: string): Promise<TokenPair | { two_factor_required: true; challenge_token: string }> {
      const dev = await store.findDeveloperByEmail(email);
      const ok = await verifyPassword(password, dev?.password_hash ?? DUMMY_PASSWORD_HASH);
      assertThat(dev && ok, 'INVALID_CREDENTIALS', 'Email or password is incorrect');
      if (dev.two_factor_enabled) {
        const challenge = tokens.issue(dev.id, '2fa_challenge', clock.now().getTime(), CHALLENGE_TTL_SECONDS);
        return { two_factor_required: true, challenge_token: challenge };
      }
      return issueTokenPair(dev.id);
    },

    /**
     * A challenge completes one login, after at most CHALLENGE_MAX_ATTEMPTS codes: each attempt is
     * counted first, in its own statement, whatever comes of it. The challenge is marked used and
     * the code spent in one transaction: a wrong code undoes both (the challenge may be tried
     * again), and a concurrent verify of the same challenge waits for this one, then finds it used.
     * Every code also counts against the account's limit (second-factor.ts).
     */
    async verifyTwoFactorLogin(challengeToken: string, code: string): Promise<TokenPair> {
      const now = clock.now();
      const developerId = tokens.verify(challengeToken, '2fa_challenge', now.getTime());
      assertThat(developerId, 'INVALID_CREDENTIALS', CHALLENGE_REFUSED_DETAIL);
      const dev = await requireDeveloper(developerId);
      const tokenHash = sha256Hex(challengeToken);
      // Issued before now, the token has expired by then: its record may go.
      const recordExpiresAt = new Date(now.getTime() + CHALLENGE_TTL_SECONDS * 1000);
      const challenge = await store.countChallengeAttempt(tokenHash, dev.id, recordExpiresAt, now);
      assertThat(!challenge.used, 'INVALID_CREDENTIALS', CHALLENGE_REFUSED_DETAIL);
      assertThat(
        challenge.attempts <= CHALLENGE_MAX_ATTEMPTS,
        'INVALID_CREDENTIALS',
        `${CHALLENGE_MAX_ATTEMPTS} codes were tried with this login challenge, the most one may take; log in again`,
      );
      await secondFactor.counted(dev, () =>
        store.transaction(async (trx) => {
          assertThat(await store.completeLoginChallenge(trx, tokenHash, now), 'INVALID_CREDENTIALS', CHALLENGE_REFUSED_DETAIL);
          assertThat(await secondFactor.matches(dev, code, trx), 'INVALID_TWO_FACTOR_CODE', WRONG_CODE_DETAIL);
        }),
      );
      return issueTokenPair(dev.id);
    },

    /** Rotates the refresh token; presenting an already-rotated one revokes its whole family (theft signal). */
    async refresh(refreshToken: string): Promise<TokenPair> {
      const m = REFRESH_TOKEN.exec(refreshToken);
      assertThat(m, 'INVALID_REFRESH_TOKEN', 'The refresh token is invalid');
      const [, id, secret] = m;
      const outcome = await store.transaction(async (trx) => {
        const row = await store.lockRefreshToken(trx, id!);
        if (!row || !safeEqual(row.secret_hash, sha256Hex(secret!))) return { kind: 'invalid' as const };
        if (row.revoked_at || row.expires_at.getTime() <= clock.now().getTime()) return { kind: 'invalid' as const };
        if (row.rotated_at) return { kind: 'reused' as const, family: row.family_id };
        await store.markRotated(trx, row.id);
        return { kind: 'ok' as const, row };
      });
      if (outcome.kind === 'reused') await store.revokeFamily(outcome.family);
      assertThat(outcome.kind === 'ok', 'INVALID_REFRESH_TOKEN', 'The refresh token is invalid, expired or already used');
      return issueTokenPair(outcome.row.developer_id, outcome.row.family_id);
    },

    async me(id: string) {
      const dev = await requireDeveloper(id);
      const plan = await store.planOf(id, clock.now());
      return { ...dev, plan: plan?.plan ?? dev.plan, plan_grace_until: plan?.plan_grace_until ?? null };
    },

    /** Answers once the old key works on no server process any more. */
    async rotateApiKey(developerId: string): Promise<string> {
      const keyId = randomHex(12);
      const secret = randomSecret(32);
      const revoked = await store.rotateApiKey(developerId, keyId, sha256Hex(secret));
      await apiKeys.awaitDropped(revoked);
      return `lk_${keyId}_${secret}`;
    },

    isApiKey: (credential: string) => credential.startsWith('lk_'),

    /** The developer of the active API key, else null; from this process's cache when it may trust it. */
    async verifyApiKey(key: string): Promise<string | null> {
      const m = API_KEY.exec(key);
      if (!m) return null;
      const keyId = m[1]!;
      const secretHash = sha256Hex(m[2]!);
      const cached = apiKeys.developerOf(keyId, secretHash);
      if (cached) return cached;
      const lookupGeneration = apiKeys.generation();
      const row = await store.findActiveApiKey(keyId);
      if (!row || !safeEqual(row.secret_hash, secretHash)) return null;
      apiKeys.remember(keyId, row.developer_id, secretHash, lookupGeneration);
      return row.developer_id;
    },

    verifyAccessToken: (token: string) => tokens.verify(token, 'access', clock.now().getTime()),

    async setupTwoFactor(developerId: string) {
      const dev = await requireDeveloper(developerId);
      if (dev.two_factor_enabled) throw new RequestError('TWO_FACTOR_ALREADY_ENABLED', 'Two-factor authentication is already on');
      const secret = totp.newSecret();
      const codes = Array.from({ length: BACKUP_CODE_COUNT }, () => {
        const c = randomHumanCode(10);
        return `${c.slice(0, 5)}-${c.slice(5)}`;
      });
      await store.startTwoFactorSetup(dev.id, masterKey.seal(secret, totpAad(dev.id)), codes.map((c) => sha256Hex(normaliseBackupCode(c))));
      return { provisioning_uri: totp.provisioningUri(secret, dev.email), backup_codes: codes };
    },

    async confirmTwoFactor(developerId: string, code: string) {
      const dev = await requireDeveloper(developerId);
      if (dev.two_factor_enabled) throw new RequestError('TWO_FACTOR_ALREADY_ENABLED', 'Two-factor authentication is already on');
      assertThat(dev.totp_pending_sealed, 'TWO_FACTOR_SETUP_REQUIRED', 'Start with POST /v1/auth/2fa/setup');
      const secret = masterKey.open(dev.totp_pending_sealed, totpAad(dev.id));
      const step = await totp.matchStep(secret, code, clock.now().getTime());
      assertThat(step !== null, 'INVALID_TWO_FACTOR_CODE', 'The code does not match the authenticator');
      await store.enableTwoFactor(dev.id, dev.totp_pending_sealed, step);
      return { two_factor_enabled: true, backup_codes_remaining: BACKUP_CODE_COUNT };
    },

    async disableTwoFactor(developerId: string, password: string, code: string) {
      const dev = await requireDeveloper(developerId);
      if (!dev.two_factor_enabled) throw new RequestError('TWO_FACTOR_NOT_ENABLED', 'Two-factor authentication is off');
      assertThat(await verifyPassword(password, dev.password_hash), 'INVALID_CREDENTIALS', 'The password is incorrect');
      await secondFactor.counted(dev, async () => assertThat(await secondFactor.matches(dev, code), 'INVALID_TWO_FACTOR_CODE', WRONG_CODE_DETAIL));
      await store.disableTwoFactor(dev.id);
      return { two_factor_enabled: false, backup_codes_remaining: 0 };
    },

    async twoFactorStatus(developerId: string) {
      const dev = await requireDeveloper(developerId);
      const remaining = dev.two_factor_enabled ? await store.countUnusedBackupCodes(dev.id) : 0;
      return { two_factor_enabled: dev.two_factor_enabled, backup_codes_remaining: remaining };
    },

    async setPlan(developerId: string, plan: DeveloperRow['plan']) {
      const dev = await store.setPlan(developerId, plan);
      assertThat(dev, 'DEVELOPER_NOT_FOUND', 'No such developer');
      return dev;
    },
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
