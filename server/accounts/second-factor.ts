import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { sha256Hex } from '../crypto/secrets.js';
import type { Db } from '../db/knex.js';
import { renderTwoFactorLockedEmail } from '../email/account-messages.js';
import type { EmailOutbox } from '../email/outbox.js';
import { RequestError } from '../errors.js';
import type { AccountsStore, DeveloperRow, TwoFactorAttemptRule } from './store.js';
import { totp } from './totp.js';

/**
 * Second-factor codes an account may try in an hour, by any route (login, re-authentication,
 * turning 2FA off); a wrong one that fills the window locks second-factor checks for an hour and
 * emails the owner. Checks under way count until they succeed, so concurrent guesses cannot
 * exceed the limit.
 */
export const TWO_FACTOR_ATTEMPTS: TwoFactorAttemptRule = { limit: 20, windowMs: 3600_000 };
export const TWO_FACTOR_LOCK_MS = 3600_000;
export const WRONG_CODE_DETAIL = 'The two-factor code is incorrect or was already used';

export const totpAad = (developerId: string) => `totp:${developerId}`;
export const normaliseBackupCode = (code: string) => code.toUpperCase().replace(/[^0-9A-Z]/g, '');

export function createSecondFactor(deps: {
  store: AccountsStore;
  clock: Clock;
  masterKey: MasterKey;
  outbox: Pick<EmailOutbox, 'queueAccountEmail'>;
  wakeJobs: () => void;
  publicBaseUrl: string;
}) {
  const { store, clock, masterKey, outbox } = deps;

  /** A TOTP code (never a time step already used, by any check) or an unused backup code; spent in `q` when given (a transaction). */
  async function matches(dev: DeveloperRow, code: string, q?: Db): Promise<boolean> {
    if (/^\d{6}$/.test(code)) {
      if (!dev.totp_secret_sealed) return false;
      const secret = masterKey.open(dev.totp_secret_sealed, totpAad(dev.id));
      const step = await totp.matchStep(secret, code, clock.now().getTime());
      return step !== null && (await store.advanceTotpStep(dev.id, step, q));
    }
    return store.useBackupCode(dev.id, sha256Hex(normaliseBackupCode(code)), q);
  }

  async function lockedError(developerId: string): Promise<RequestError> {
    const until = await store.twoFactorLockedUntil(developerId);
    const seconds = until ? Math.ceil((until.getTime() - clock.now().getTime()) / 1000) : 0;
    // Refused without a lock: the window is full of checks still under way; one of them settles it soon.
    const retryAfter = seconds > 0 ? seconds : 60;
    return new RequestError(
      'TWO_FACTOR_LOCKED',
      `Too many wrong two-factor codes: two-factor checks of this account are locked${until && seconds > 0 ? ` until ${until.toISOString()}` : ''}; ` +
        'the account owner was emailed. A password reset lifts the lock',
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  /** After a wrong code: the one that fills the window locks checks and queues the owner's notice, once per lockout. */
  async function recordFailure(dev: DeveloperRow, since: Date): Promise<void> {
    const lockedUntil = new Date(clock.now().getTime() + TWO_FACTOR_LOCK_MS);
    const locked = await store.transaction(async (trx) => {
      const owner = await store.lockTwoFactorWhenExhausted(trx, dev.id, since, lockedUntil, TWO_FACTOR_ATTEMPTS);
      if (!owner) return false;
      await outbox.queueAccountEmail(trx, {
        developerId: dev.id,
        recipient: owner.email,
        kind: 'two_factor_locked',
        message: renderTwoFactorLockedEmail({ email: owner.email, wrongCodes: TWO_FACTOR_ATTEMPTS.limit, lockedUntil, publicBaseUrl: deps.publicBaseUrl }),
        dedupeKey: `${dev.id}:${lockedUntil.getTime()}`,
      });
      return true;
    });
    if (locked) deps.wakeJobs();
  }

  return {
    matches,

    /**
     * Runs `check`, one second-factor check of `dev`, under the account's attempt limit: refused
     * with 429 TWO_FACTOR_LOCKED while locked; `check` throwing INVALID_TWO_FACTOR_CODE counts as a
     * wrong code, anything else (success, another refusal) is taken back.
     */
    async counted<T>(dev: DeveloperRow, check: () => Promise<T>): Promise<T> {
      const since = await store.reserveTwoFactorAttempt(dev.id, clock.now(), TWO_FACTOR_ATTEMPTS);
      if (!since) throw await lockedError(dev.id);
      try {
        const result = await check();
        await store.refundTwoFactorAttempt(dev.id, since);
        return result;
      } catch (err) {
        if (err instanceof RequestError && err.code === 'INVALID_TWO_FACTOR_CODE') await recordFailure(dev, since);
        else await store.refundTwoFactorAttempt(dev.id, since);
        throw err;
      }
    },
  };
}

export type SecondFactor = ReturnType<typeof createSecondFactor>;
