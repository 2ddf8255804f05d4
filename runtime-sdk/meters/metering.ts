/**
 * `license.consume()`'s work (docs/protocol.md, Metered features): each consumption goes to the
 * authority with an idempotency key; when the authority cannot be reached, it is queued with that key
 * in the meter book, sealed beside the license cache, if the last known balance covers it, and
 * reported in order before the next consumption and after each refresh. The authority counts each key
 * once, so a report whose answer was lost is simply sent again.
 */
import { randomBytes } from 'node:crypto';
import type { AuthorityClient } from '../authority/authority-client.js';
import { LicenseError } from '../errors.js';
import type { ResolvedOptions } from '../options.js';
import type { ConsumeAnswer } from '../protocol.js';
import { METER_BOOK_SUFFIX, type LicenseVault } from '../token-store/license-vault.js';
import { balanceFor, balanceOf, emptyBook, localRemaining, parseBook, whenRefused, type MeterBookState, type PendingConsumption } from './meter-book.js';

/** As the authority takes them (server/licenses/meters/schemas.ts). */
const FEATURE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_.:-]{8,128}$/;
const MAX_QUANTITY = 1_000_000;

/** What `consume()` resolves with. */
export interface ConsumeResult {
  feature: string;
  quantity: number;
  /** Units left in the period after this consumption: the authority's answer, or when queued, this installation's own count. */
  remaining: number;
  usesPerPeriod: number;
  /** When the balance resets; null for a lifetime meter. */
  periodEndsAt: Date | null;
  /** true: the authority was not reached; the consumption is kept with its key and reported later. */
  queued: boolean;
  /** The key the consumption is counted under (the one given, or the one generated). */
  idempotencyKey: string;
}

export interface ConsumeOptions {
  /** Unique per consumption; generated when omitted. Giving the same key again counts it once. */
  idempotencyKey?: string;
}

/** The held grant a consumption is made under. */
export interface MeteringGrant {
  token: string;
  licenseId: string;
  /** Whether the license may be used now (offline, only a usable license queues). */
  usable: boolean;
}

export function checkConsumption(feature: unknown, quantity: unknown, options: ConsumeOptions): void {
  const fail = (what: string) => {
    throw new LicenseError('REQUEST_REJECTED', `consume(): ${what}`);
  };
  if (typeof feature !== 'string' || !FEATURE_PATTERN.test(feature)) fail('the feature must be 1 to 64 letters, digits, _ . : or -');
  if (!Number.isInteger(quantity) || (quantity as number) < 1 || (quantity as number) > MAX_QUANTITY) fail(`the quantity must be an integer from 1 to ${MAX_QUANTITY}`);
  if (options.idempotencyKey !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(options.idempotencyKey)) fail('the idempotency key must be 8 to 128 letters, digits, _ . : or -');
}

export class Metering {
  constructor(
    private readonly vault: LicenseVault,
    private readonly authority: AuthorityClient,
    private readonly options: ResolvedOptions,
    /** The authority's time now as this installation reckons it (its clock plus the skew the last grant measured): consumptions are dated and periods ended by it. */
    private readonly authorityNow: () => number,
  ) {}

  /** Whether consumptions of `licenseId` wait to be reported (the token is read only then). */
  async hasPending(licenseId: string): Promise<boolean> {
    return (await this.read(licenseId)).pending.length > 0;
  }

  /**
   * Reports the queued consumptions in order, each removed once the authority answered it: counted,
   * or refused for good (dropped with a warning). Stops at the first it may count later (whenRefused):
   * the authority unreachable, the device or token to be renewed (rejects with that error), or a form
   * the authority refused (kept with a warning, resolves). The rest stays queued.
   */
  async report(grant: Pick<MeteringGrant, 'token' | 'licenseId'>): Promise<void> {
    for (let book = await this.read(grant.licenseId); book.pending.length > 0;) {
      const item = book.pending[0]!;
      let answer: ConsumeAnswer | undefined;
      try {
        answer = await this.authority.consume({
          token: grant.token,
          feature: item.feature,
          quantity: item.quantity,
          idempotency_key: item.idempotencyKey,
          // Never ahead of the authority's time as now reckoned (the clock may have been set back since): it would be refused.
          consumed_at: new Date(Math.min(Date.parse(item.consumedAt), this.authorityNow())).toISOString(),
        });
      } catch (err) {
        if (!(err instanceof LicenseError)) throw err;
        const refusal = whenRefused(err);
        const detail = { feature: item.feature, quantity: item.quantity, code: err.code, status: err.extra.status, reason: err.message };
        if (refusal === 'keep') throw err;
        if (refusal === 'set-aside') {
          this.options.logger.warn('the authority refused the form of a queued consumption; it stays queued and is reported again later', detail);
          return;
        }
        this.options.logger.warn('the authority refused a queued consumption for good; it is not counted', detail);
      }
      book = await this.update(grant.licenseId, (current) => {
        if (answer) current.balances[item.feature] = balanceOf(answer);
        current.pending = current.pending.filter((p) => p.idempotencyKey !== item.idempotencyKey);
      });
    }
  }

  async consume(grant: MeteringGrant, feature: string, quantity: number, options: ConsumeOptions): Promise<ConsumeResult> {
    const book = await this.read(grant.licenseId);
    const idempotencyKey = options.idempotencyKey ?? randomBytes(16).toString('hex');
    const queuedAlready = book.pending.find((p) => p.idempotencyKey === idempotencyKey);
    try {
      // Earlier consumptions first, so the authority counts them in the order they happened.
      await this.report(grant);
      const answer = await this.authority.consume({ token: grant.token, feature, quantity, idempotency_key: idempotencyKey });
      await this.update(grant.licenseId, (current) => void (current.balances[feature] = balanceOf(answer)));
      return resultOf(answer, idempotencyKey);
    } catch (err) {
      if (!(err instanceof LicenseError) || !err.retryable) throw err;
      return this.queue(book, grant, queuedAlready ?? { idempotencyKey, feature, quantity, consumedAt: new Date(this.authorityNow()).toISOString() }, err, !queuedAlready);
    }
  }

  /**
   * The authority was not reached, or its answer was lost (then it may have counted the consumption:
   * its key, kept with the queued item, makes the report count nothing more). Queued only on a usable
   * license whose known balance covers it; otherwise refused with `unreached` or USAGE_LIMIT_REACHED.
   */
  private async queue(book: MeterBookState, grant: MeteringGrant, item: PendingConsumption, unreached: LicenseError, isNew: boolean): Promise<ConsumeResult> {
    const balance = balanceFor(book, item.feature);
    const left = localRemaining(book, item.feature, this.authorityNow());
    if (!grant.usable || !balance || left === undefined) throw unreached;
    const periodEndsAt = balance.periodEndsAt === null ? null : new Date(balance.periodEndsAt);
    if (isNew) {
      if (left < item.quantity) {
        throw new LicenseError('USAGE_LIMIT_REACHED', `offline: ${left} of ${item.feature} left, ${item.quantity} asked`, { remaining: left, periodEndsAt, cause: unreached });
      }
      await this.update(grant.licenseId, (current) => {
        if (!current.pending.some((p) => p.idempotencyKey === item.idempotencyKey)) current.pending.push(item);
      });
    }
    const remaining = isNew ? left - item.quantity : left;
    return { feature: item.feature, quantity: item.quantity, remaining, usesPerPeriod: balance.usesPerPeriod, periodEndsAt, queued: true, idempotencyKey: item.idempotencyKey };
  }

  /**
   * The book of `licenseId` as its sealed file holds it now; another license's (or none) starts empty.
   * Read again for every change: another instance of the app may have queued or reported since.
   */
  private async read(licenseId: string): Promise<MeterBookState> {
    const read = parseBook(await this.vault.openBeside(METER_BOOK_SUFFIX));
    return read?.licenseId === licenseId ? read : emptyBook(licenseId);
  }

  /**
   * `change` made to the book as on disk now, then saved: another instance's queued consumptions are
   * kept, not overwritten by this one's older copy (the authority counts each key once, so one
   * reported by both is counted once). Rejects when the book could not be written: a queued
   * consumption must be on disk before it is reported as queued.
   */
  private async update(licenseId: string, change: (book: MeterBookState) => void): Promise<MeterBookState> {
    const book = await this.read(licenseId);
    change(book);
    await this.vault.sealBeside(METER_BOOK_SUFFIX, book);
    return book;
  }
}

function resultOf(answer: ConsumeAnswer, idempotencyKey: string): ConsumeResult {
  return {
    feature: answer.feature,
    quantity: answer.quantity,
    remaining: answer.remaining,
    usesPerPeriod: answer.uses_per_period,
    periodEndsAt: answer.period_ends_at === null ? null : new Date(answer.period_ends_at),
    queued: false,
    idempotencyKey,
  };
}
