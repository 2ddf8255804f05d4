import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { DUMMY_PASSWORD_HASH, hashPassword, newId, randomHumanCode, sha256Hex, verifyPassword } from '../crypto/secrets.js';
import { isUniqueViolation, type Db } from '../db/knex.js';
import type { NotificationListener } from '../db/notification-listener.js';
import type { EmailOutbox } from '../email/outbox.js';
import { RequestError, assertThat } from '../errors.js';
import { createApiKeyStore } from './api-key-store.js';
import { apiKeyView, createApiKeys, type ApiKeySpec } from './api-keys.js';
import { API_KEY_CHANNELS, createCredentialCache, SESSION_CHANNELS } from './credential-cache.js';
import { createPasswordResetStore } from './password-reset-store.js';
import { createPasswords } from './passwords.js';
import { createSecondFactor, normaliseBackupCode, totpAad, WRONG_CODE_DETAIL } from './second-factor.js';
import { createSessions, type TokenPair } from './sessions.js';
import { createAccountsStore, type DeveloperRow } from './store.js';
import { SessionTokens } from './tokens.js';
import { totp } from './totp.js';

export const CHALLENGE_TTL_SECONDS = 300;
/** Codes one login challenge may be tried with; the next attempt is refused whatever its code, and the login starts again. */
export const CHALLENGE_MAX_ATTEMPTS = 5;
const CHALLENGE_REFUSED_DETAIL = 'The login challenge is invalid, expired or already used; log in again';
const BACKUP_CODE_COUNT = 10;

/** What a request that changes the account's security proves afresh: the password, or a current TOTP or backup code. */
export interface Reauthentication {
  password?: string | undefined;
  code?: string | undefined;
}

export interface AccountsDeps {
  db: Db;
  clock: Clock;
  masterKey: MasterKey;
  /** Revoked API keys and ended sessions reach every server process through it. */
  listener: NotificationListener;
  /** Notices about the account's security (a 2FA lockout, a reset link, a password change) go through the outbox. */
  outbox: Pick<EmailOutbox, 'queueAccountEmail'>;
  wakeJobs: () => void;
  publicBaseUrl: string;
}

export function createAccountsService(deps: AccountsDeps) {
  const { db, clock, masterKey, listener } = deps;
  const store = createAccountsStore(db);
  const apiKeyStore = createApiKeyStore(db);
  const tokens = new SessionTokens(masterKey.derive('session-tokens'));
  const secondFactor = createSecondFactor({ ...deps, store });
  const sessions = createSessions({ store, clock, tokens, cache: createCredentialCache<string>(listener, SESSION_CHANNELS) });
  const apiKeys = createApiKeys({ store: apiKeyStore, clock, cache: createCredentialCache(listener, API_KEY_CHANNELS) });
  const passwords = createPasswords({ ...deps, store, resets: createPasswordResetStore(db), apiKeyStore, sessions });

  async function requireDeveloper(id: string): Promise<DeveloperRow> {
    const dev = await store.findDeveloper(id);
    assertThat(dev, 'UNAUTHORIZED', 'The account no longer exists');
    return dev;
  }

  /**
   * The proof a security change needs besides the session: the password, or a current TOTP or
   * backup code (counted like any second-factor check; a TOTP code is spent). 403 without either.
   */
  async function reauthenticate(developerId: string, proof: Reauthentication): Promise<DeveloperRow> {
    const dev = await requireDeveloper(developerId);
    const { password, code } = proof;
    assertThat(
      password !== undefined || code !== undefined,
      'REAUTHENTICATION_REQUIRED',
      'Confirm it is you: send your password (`password`) or a current two-factor code (`code`) with this request',
    );
    if (password !== undefined) assertThat(await verifyPassword(password, dev.password_hash), 'INVALID_CREDENTIALS', 'The password is incorrect');
    if (code !== undefined) {
      await secondFactor.counted(dev, async () => assertThat(dev.two_factor_enabled && (await secondFactor.matches(dev, code)), 'INVALID_TWO_FACTOR_CODE', WRONG_CODE_DETAIL));
    }
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
      return sessions.start(dev.id);
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
      const verified = tokens.verify(challengeToken, '2fa_challenge', now.getTime());
      assertThat(verified, 'INVALID_CREDENTIALS', CHALLENGE_REFUSED_DETAIL);
      const dev = await requireDeveloper(verified.sub);
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
      return sessions.start(dev.id);
    },

    refresh: sessions.refresh,
    verifyAccessToken: sessions.verifyAccessToken,

    async me(id: string) {
      const dev = await requireDeveloper(id);
      const plan = await store.planOf(id, clock.now());
      return { ...dev, plan: plan?.plan ?? dev.plan, plan_grace_until: plan?.plan_grace_until ?? null };
    },

    verifyApiKey: apiKeys.verify,
    isApiKey: apiKeys.isApiKey,

    listApiKeys: async (developerId: string) => (await apiKeys.list(developerId)).map(apiKeyView),

    async createApiKey(developerId: string, request: ApiKeySpec & Reauthentication) {
      await reauthenticate(developerId, request);
      return apiKeys.create(developerId, request);
    },

    /** A new key replaces every active one; answers once no server process accepts those any more. */
    async rotateApiKey(developerId: string, request: ApiKeySpec & Reauthentication) {
      await reauthenticate(developerId, request);
      return apiKeys.rotate(developerId, request);
    },

    async revokeApiKey(developerId: string, keyId: string, proof: Reauthentication) {
      await apiKeys.assertActive(developerId, keyId);
      await reauthenticate(developerId, proof);
      await apiKeys.revoke(developerId, keyId);
    },

    /** Every other session ends; the owner is emailed the API keys to review. */
    async changePassword(developerId: string, sessionId: string, request: Reauthentication & { new_password: string }) {
      await reauthenticate(developerId, request);
      await passwords.change(developerId, sessionId, request.new_password);
    },

    requestPasswordReset: passwords.requestReset,
    resetPassword: passwords.resetWithToken,
    passwordResetUsable: passwords.resetTokenUsable,

    async setupTwoFactor(developerId: string, proof: Reauthentication) {
      const dev = await reauthenticate(developerId, proof);
      if (dev.two_factor_enabled) throw new RequestError('TWO_FACTOR_ALREADY_ENABLED', 'Two-factor authentication is already on');
      const secret = totp.newSecret();
      const codes = Array.from({ length: BACKUP_CODE_COUNT }, () => {
        const c = randomHumanCode(10);
        return `${c.slice(0, 5)}-${c.slice(5)}`;
      });
      await store.startTwoFactorSetup(
        dev.id,
        masterKey.seal(secret, totpAad(dev.id)),
        codes.map((c) => sha256Hex(normaliseBackupCode(c))),
      );
      return { provisioning_uri: totp.provisioningUri(secret, dev.email), backup_codes: codes };
    },

    /** Turning 2FA on ends every other session: one that someone else held needs the second factor now. */
    async confirmTwoFactor(developerId: string, sessionId: string, code: string) {
      const dev = await requireDeveloper(developerId);
      if (dev.two_factor_enabled) throw new RequestError('TWO_FACTOR_ALREADY_ENABLED', 'Two-factor authentication is already on');
      assertThat(dev.totp_pending_sealed, 'TWO_FACTOR_SETUP_REQUIRED', 'Start with POST /v1/auth/2fa/setup');
      const secret = masterKey.open(dev.totp_pending_sealed, totpAad(dev.id));
      const step = await totp.matchStep(secret, code, clock.now().getTime());
      assertThat(step !== null, 'INVALID_TWO_FACTOR_CODE', 'The code does not match the authenticator');
      const pendingSealed = dev.totp_pending_sealed;
      const sessionsDropped = await store.transaction(async (trx) => {
        await store.enableTwoFactor(trx, dev.id, pendingSealed, step);
        return sessions.end(trx, dev.id, sessionId);
      });
      await sessionsDropped();
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
