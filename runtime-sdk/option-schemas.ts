/**
 * The pieces of the SDK's option schemas (`createLicenseClient`, `createUpdater`), in `zod/mini`:
 * its functional API lets the SDK's build (which bundles zod: scripts/build.mjs) keep only the checks
 * used, a few KB of zod instead of its whole core.
 */
import * as z from 'zod/mini';
import { LicenseError } from './errors.js';

/**
 * The schemas below are built once and shared by every option of their kind: a schema is
 * immutable, and building schemas is most of what loading the options costs an app's start.
 */
const optionalNumber = (allowZero: boolean) => {
  const wanted = allowZero ? 'must be a number of zero or more' : 'must be a positive number';
  return z.optional(z.number({ error: wanted }).check(z.refine((n) => Number.isFinite(n) && (allowZero ? n >= 0 : n > 0), wanted)));
};
const [aboveZero, zeroOrMore] = [optionalNumber(false), optionalNumber(true)];

/** A count option: unset, or a finite number above zero (or zero, with `allowZero`). */
export const positiveNumber = (allowZero = false) => (allowZero ? zeroOrMore : aboveZero);

/** The longest delay Node's timers keep: a longer one fires after 1 ms (a refresh loop, a timeout at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const optionalDuration = (allowZero: boolean) => {
  const wanted = `must be a number of milliseconds ${allowZero ? 'from 0' : 'above 0'} up to ${MAX_TIMER_MS} (about 24.8 days)`;
  return z.optional(z.number({ error: wanted }).check(z.refine((n) => Number.isFinite(n) && (allowZero ? n >= 0 : n > 0) && n <= MAX_TIMER_MS, wanted)));
};
const [durationAboveZero, durationFromZero] = [optionalDuration(false), optionalDuration(true)];

/** A duration option in milliseconds: unset, or above zero (or zero, with `allowZero`) and no longer than a timer can wait. */
export const duration = (allowZero = false) => (allowZero ? durationFromZero : durationAboveZero);

export const optionalFlag = z.optional(z.boolean({ error: 'must be true or false' }));

const anyFunction = z.optional(z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', 'must be a function'));

/** An option that must be a function (a loader, a callback) when given; typed as the caller's option is. */
export const optionalFunction = <T extends (...args: never[]) => unknown>() => anyFunction as unknown as z.ZodMiniOptional<z.ZodMiniCustom<T, T>>;

/**
 * `options` parsed by `schema`, or the SDK's documented refusal: a `LicenseError` `INVALID_OPTIONS`
 * whose message names the option and says what it must be (the first problem found).
 */
export function parseOptions<S extends z.ZodMiniType>(schema: S, options: unknown): z.output<S> {
  if (!options || typeof options !== 'object') throw new LicenseError('INVALID_OPTIONS', 'options are required');
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const name = issue.path.length > 0 ? issue.path.map(String).join('.') : 'options';
  throw new LicenseError('INVALID_OPTIONS', `${name} ${issue.message}`, { cause: parsed.error });
}
