import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { hashPassword, newId, randomSecret, sha256Hex } from '../crypto/secrets.js';
import { renderPasswordChangedEmail, renderPasswordResetEmail } from '../email/account-messages.js';
import type { EmailOutbox } from '../email/outbox.js';
import { assertThat } from '../errors.js';
import type { ApiKeyStore } from './api-key-store.js';
import type { PasswordResetStore } from './password-reset-store.js';
import type { Sessions } from './sessions.js';
import type { AccountsStore } from './store.js';

export const PASSWORD_RESET_TTL_MINUTES = 15;
/** The hosted page a reset link opens (server/pages/password-reset-routes.ts). */
export const RESET_PAGE_PATH = '/reset-password';
const RESET_TOKEN = /^pr_[A-Za-z0-9_-]{43}$/;
const RESET_REFUSED_DETAIL = 'The reset link is invalid, expired or already used: ask for a new one';

/**
 * Changing a password, while signed in or through an emailed single-use link. Either way the
 * account's other sessions end (a reset: every session) and the owner is emailed the API keys that
 * still work, to review them.
 */
export function createPasswords(deps: {
  store: AccountsStore;
  resets: PasswordResetStore;
  apiKeyStore: ApiKeyStore;
  sessions: Sessions;
  clock: Clock;
  masterKey: MasterKey;
  outbox: Pick<EmailOutbox, 'queueAccountEmail'>;
  wakeJobs: () => void;
  publicBaseUrl: string;
}) {
  const { store, resets, clock, outbox } = deps;

  /** In `trx`: the new password, the sessions ended (but `keep`), the notice with the API keys queued. Call the answer after the commit. */
  async function replacePassword(trx: Knex.Transaction, developerId: string, passwordHash: string, how: 'reset' | 'changed', keep?: string) {
    await store.setPassword(trx, developerId, passwordHash);
    const sessionsDropped = await deps.sessions.end(trx, developerId, keep);
    const dev = (await store.findDeveloper(developerId))!;
    const keys = await deps.apiKeyStore.listActive(developerId);
    await outbox.queueAccountEmail(trx, {
      developerId,
      recipient: dev.email,
      kind: 'password_changed',
      message: renderPasswordChangedEmail({
        email: dev.email,
        how,
        apiKeys: keys.map((k) => ({ prefix: `lk_${k.id}`, name: k.name, scopes: k.scopes, lastUsedAt: k.last_used_at })),
        publicBaseUrl: deps.publicBaseUrl,
      }),
      dedupeKey: newId('chg'),
    });
    return async () => {
      deps.wakeJobs();
      await sessionsDropped();
    };
  }

  return {
    /** Emails a reset link when an account has this address; says nothing either way. */
    async requestReset(email: string): Promise<void> {
      const dev = await store.findDeveloperByEmail(email);
      if (!dev) return;
      const token = `pr_${randomSecret(32)}`;
      const now = clock.now();
      const link = `${deps.publicBaseUrl}${RESET_PAGE_PATH}?token=${token}`;
      await store.transaction(async (trx) => {
        await resets.insert(trx, { token_hash: sha256Hex(token), developer_id: dev.id, expires_at: new Date(now.getTime() + PASSWORD_RESET_TTL_MINUTES * 60_000) }, now);
        await outbox.queueAccountEmail(trx, {
          developerId: dev.id,
          recipient: dev.email,
          kind: 'password_reset',
          message: renderPasswordResetEmail({ email: dev.email, link, validMinutes: PASSWORD_RESET_TTL_MINUTES, publicBaseUrl: deps.publicBaseUrl }),
          dedupeKey: sha256Hex(token),
          // The link is a credential: the stored email is sealed.
          sealWith: deps.masterKey,
        });
      });
      deps.wakeJobs();
    },

    /** Whether a reset token may still be used. */
    async resetTokenUsable(token: string): Promise<boolean> {
      return RESET_TOKEN.test(token) && (await resets.isUsable(sha256Hex(token), clock.now()));
    },

    /** Uses a reset token once: the new password, every session of the account ended. */
    async resetWithToken(token: string, newPassword: string): Promise<void> {
      assertThat(RESET_TOKEN.test(token), 'INVALID_RESET_TOKEN', RESET_REFUSED_DETAIL);
      const passwordHash = await hashPassword(newPassword);
      const done = await store.transaction(async (trx) => {
        const developerId = await resets.consume(trx, sha256Hex(token), clock.now());
        assertThat(developerId, 'INVALID_RESET_TOKEN', RESET_REFUSED_DETAIL);
        return replacePassword(trx, developerId, passwordHash, 'reset');
      });
      await done();
    },

    /** A new password for a signed-in (and re-authenticated) developer: every session but `keep` ends. */
    async change(developerId: string, keep: string, newPassword: string): Promise<void> {
      const passwordHash = await hashPassword(newPassword);
      const done = await store.transaction((trx) => replacePassword(trx, developerId, passwordHash, 'changed', keep));
      await done();
    },
  };
}

export type Passwords = ReturnType<typeof createPasswords>;
