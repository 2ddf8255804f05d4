import { z } from 'zod';
import { JsonValue } from '../http/json-value.js';
import { GivenInstant } from '../http/timestamp.js';
import { PageQuery } from '../http/pagination.js';
import { DEACTIVATION_SOURCES } from './deactivation-history.js';
import { Meters } from './meters/schemas.js';
import { DEFAULT_LEASE_TTL_MINUTES, LICENSE_STATUSES, LICENSE_TYPES, SEAT_MODELS, type LicenseType, type SeatModel } from './rules.js';

const MAX_FEATURES_JSON_BYTES = 4096;

/** Read by the runtime from every token, so it is kept small. */
export const Features = z
  .record(z.string().min(1).max(64), JsonValue)
  .refine((f) => Buffer.byteLength(JSON.stringify(f)) <= MAX_FEATURES_JSON_BYTES, `must serialise to at most ${MAX_FEATURES_JSON_BYTES} bytes`);

/**
 * docs/contract.md, Limits: a developer-set download limit replaces the store's default allowance
 * (10 per build offered) and does not add to it; null goes back to the default.
 */
const DownloadLimit = z
  .number()
  .int()
  .min(1)
  .max(1_000_000)
  .nullable()
  .describe("Downloads of the license's delivery page and installer in all; replaces the default allowance (10 per build offered), null: the default");

export const MaxConcurrent = z.number().int().min(1).max(10_000);
export const LeaseTtlMinutes = z.number().int().min(3).max(1440);

/** The seat fields of what creates licenses (a license, a redemption batch), described once. */
export const seatFields = {
  seat_model: z
    .enum(SEAT_MODELS)
    .default('node_locked')
    .describe('node_locked: device_limit devices may activate; floating: any device, at most max_concurrent running at once (docs/protocol.md, Floating licenses)'),
  max_concurrent: MaxConcurrent.optional().describe('Floating licenses only, and required for them: the seats in use at once'),
  lease_ttl_minutes: LeaseTtlMinutes.optional().describe(
    `Floating licenses only: how long a seat stays taken without a heartbeat, and the offline grace. Default ${DEFAULT_LEASE_TTL_MINUTES}`,
  ),
};

/**
 * The combinations a floating license allows: its seats are max_concurrent (required) instead of
 * device_limit, and a trial is node_locked (it spends the trials of each computer).
 */
export function refineSeatModel(
  b: { seat_model: SeatModel; max_concurrent?: number | undefined; lease_ttl_minutes?: number | undefined; device_limit?: number | undefined; license_type: LicenseType },
  ctx: z.RefinementCtx,
) {
  const floating = b.seat_model === 'floating';
  const refuse = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (floating && b.max_concurrent === undefined) refuse('max_concurrent', 'required for a floating license');
  if (floating && b.device_limit !== undefined) refuse('device_limit', 'a floating license counts max_concurrent seats instead');
  if (floating && b.license_type === 'trial') refuse('seat_model', 'a trial is node_locked: it spends the trials of each computer');
  if (!floating && b.max_concurrent !== undefined) refuse('max_concurrent', 'floating licenses only');
  if (!floating && b.lease_ttl_minutes !== undefined) refuse('lease_ttl_minutes', 'floating licenses only');
}

export const CreateLicenseBody = z
  .strictObject({
    app_id: z.string().max(64),
    email: z.email().max(254).nullable().optional(),
    device_limit: z.number().int().min(1).max(10_000).optional().describe("Default: the app's default_device_limit"),
    license_type: z.enum(LICENSE_TYPES).default('perpetual').describe('The free plan may create trial licenses only'),
    expires_at: GivenInstant.optional().describe('Must be in the future'),
    expiry_days: z.number().int().min(1).max(36_500).optional(),
    features: Features.default({}),
    meters: Meters.default({}),
    download_limit: DownloadLimit.optional(),
    ...seatFields,
  })
  .refine((b) => b.expires_at === undefined || b.expiry_days === undefined, 'give expires_at or expiry_days, not both')
  .superRefine(refineSeatModel)
  .describe('A trial without expires_at or expiry_days runs 14 days from its first activation');
export type CreateLicenseInput = z.infer<typeof CreateLicenseBody>;

export const LICENSE_STATUS_FILTERS = ['active', 'revoked', 'expired', 'demo'] as const;
export type LicenseStatusFilter = (typeof LICENSE_STATUS_FILTERS)[number];

export const ListLicensesQuery = PageQuery.extend({
  app_id: z.string().max(64).optional(),
  status: z.enum(LICENSE_STATUS_FILTERS).optional(),
  q: z.string().trim().min(1).max(254).optional().describe('Search: a license key or license id (exact, any case), or part of the email address (case-insensitive)'),
});
export type ListLicensesFilter = z.infer<typeof ListLicensesQuery>;

export const LicenseIdParams = z.object({ license_id: z.string().max(64) });

export const SetSeatsBody = z.strictObject({
  max_concurrent: MaxConcurrent,
  lease_ttl_minutes: LeaseTtlMinutes.optional().describe('Omitted: unchanged'),
});
export type SetSeatsInput = z.infer<typeof SetSeatsBody>;

export const SetDownloadLimitBody = z.strictObject({ download_limit: DownloadLimit });
export type SetDownloadLimitInput = z.infer<typeof SetDownloadLimitBody>;

export const License = z.object({
  license_id: z.string(),
  license_key: z.string(),
  app_id: z.string(),
  status: z.enum(LICENSE_STATUSES),
  license_type: z.enum(LICENSE_TYPES),
  device_limit: z.number().int().describe('Node-locked: the devices that may activate; floating: max_concurrent again'),
  seat_model: z.enum(SEAT_MODELS),
  max_concurrent: z.number().int().nullable().describe('Floating: the seats in use at once; null when node_locked'),
  lease_ttl_minutes: z.number().int().nullable().describe('Floating: the lease life a heartbeat renews, and the offline grace; null when node_locked'),
  email: z.string().nullable(),
  expires_at: z.iso.datetime().nullable().describe('null: perpetual, or a trial whose clock has not started'),
  features: z.record(z.string(), z.unknown()),
  meters: Meters.describe('Metered features: per feature name, uses_per_period and period; usage at GET /v1/licenses/{license_id}/usage'),
  source: z.string().describe('The channel that created the license'),
  payment_session_id: z.string().nullable(),
  download_limit: z.number().int().nullable(),
  revoked_at: z.iso.datetime().nullable(),
  tamper_reports: z.number().int().describe("Starts of a modified copy of the app's protected builds that the runtime reported under this license"),
  last_tamper_report_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
});

export const Device = z.object({
  fingerprint_hash: z.string(),
  platform: z.string().nullable(),
  engine_version: z.string().nullable(),
  app_version: z.string().nullable().describe('Installed version, as reported on the latest launch'),
  first_seen_at: z.iso.datetime(),
  last_seen_at: z.iso.datetime(),
});

export const LicenseWithDevices = License.extend({
  seats_in_use: z.number().int().nullable().describe('Floating: the leases live now (copies running, or gone without checking in and not yet lapsed); null when node_locked'),
  devices: z.array(Device),
});

export const ResetDevicesResult = z.object({ license_id: z.string(), devices_removed: z.number().int() });

export const Deactivation = z.object({
  fingerprint_hash: z.string().describe('The device taken off the license'),
  source: z
    .enum(DEACTIVATION_SOURCES)
    .describe(
      'app: the app deactivated itself (counted against the app quota); developer: your reset of the devices; store_reset: the store reset them (entitlement companion); revoked: the store revoked the license, deactivating its devices. Only app counts against the quota',
    ),
  deactivated_at: z.iso.datetime(),
});
