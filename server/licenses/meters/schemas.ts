import type { ConsumeAnswer, ConsumeRequest } from '@latchkey/runtime-sdk/protocol';
import { z } from 'zod';
import { METER_PERIODS } from './periods.js';

const MAX_METERS = 32;
/** Long enough for a UUID or a ULID with a prefix; the SDK generates 32 hex characters. */
const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_.:-]{8,128}$/;

const FEATURE_NAME_RULE = 'must be 1 to 64 letters, digits, _ . : or -, starting with a letter or digit';

export const FeatureName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, FEATURE_NAME_RULE)
  .describe('The metered feature, as the app names it in consume()');

export const MeterPeriodField = z
  .enum(METER_PERIODS)
  .describe('day, month, year: calendar periods in UTC (the balance resets at 00:00 UTC, on the 1st, on 1 January); lifetime: never resets');

export const Meter = z.strictObject({
  uses_per_period: z.number().int().min(1).max(1_000_000_000).describe('Units the license may consume per period'),
  period: MeterPeriodField,
});
export type Meter = z.infer<typeof Meter>;

/** feature → meter; replaces the license's meters as a whole. */
export const Meters = z
  .record(FeatureName, Meter, { error: (issue) => (issue.code === 'invalid_key' ? `a feature name ${FEATURE_NAME_RULE}` : undefined) })
  .refine((m) => Object.keys(m).length <= MAX_METERS, `at most ${MAX_METERS} meters`)
  .describe('Metered features: per feature name, uses_per_period and period (docs/protocol.md, Metered features)');
export type Meters = z.infer<typeof Meters>;

export const SetMetersBody = z.strictObject({ meters: Meters });
export type SetMetersInput = z.infer<typeof SetMetersBody>;

export const MeterUsage = z.object({
  feature: z.string(),
  uses_per_period: z.number().int(),
  period: MeterPeriodField,
  used: z.number().int().describe('Units consumed in the current period'),
  remaining: z.number().int().describe('uses_per_period minus used, never below 0 (a lowered limit may leave used above it)'),
  period_starts_at: z.iso.datetime(),
  period_ends_at: z.iso.datetime().nullable().describe('When the balance resets; null for lifetime'),
});

export const LicenseUsage = z.object({
  license_id: z.string(),
  meters: z.array(MeterUsage).describe('One entry per meter of the license, by feature name, in the current period'),
});

const MAX_TOKEN_CHARS = 16_384;

export const ConsumeBody = z.object({
  token: z.string().min(1).max(MAX_TOKEN_CHARS).describe('The runtime token the installation holds; an expired one is accepted if genuine'),
  feature: FeatureName,
  quantity: z.number().int().min(1).max(1_000_000).default(1),
  idempotency_key: z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN, 'must be 8 to 128 letters, digits, _ . : or -')
    .describe('Chosen by the runtime, unique per consumption and kept with it until answered: a replay counts nothing and gets the first answer'),
  consumed_at: z.iso
    .datetime({ offset: true })
    .optional()
    .describe(
      'When the app consumed it (an offline consumption reported later); default now. Recorded only: the units count in the period current when the ' +
        'authority receives them, however old this is; not more than 5 minutes in the future',
    ),
}) satisfies z.ZodType<ConsumeRequest, unknown>;
export type ConsumeInput = z.infer<typeof ConsumeBody>;

export const ConsumeResult = z.object({
  license_id: z.string(),
  feature: z.string(),
  quantity: z.number().int(),
  used: z.number().int().describe('Units consumed in the period after this consumption'),
  remaining: z.number().int().describe('Units left in the period after this consumption'),
  uses_per_period: z.number().int(),
  period_ends_at: z.iso.datetime().nullable().describe('When the balance resets; null for lifetime'),
  replayed: z.boolean().describe('true: this idempotency key was already counted; the first answer is repeated and nothing more counted'),
}) satisfies z.ZodType<ConsumeAnswer>;
export type ConsumeResult = z.infer<typeof ConsumeResult>;
