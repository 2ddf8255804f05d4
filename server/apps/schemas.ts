import { z } from 'zod';
import { Meters } from '../licenses/meters/schemas.js';
import { LeaseTtlMinutes, MaxConcurrent } from '../licenses/schemas.js';
import { DEFAULT_LEASE_TTL_MINUTES, SEAT_MODELS, type SeatModel } from '../licenses/rules.js';

/** Operating system and architecture pairs an app can target. */
export const PLATFORMS = ['win-x64', 'win-arm64', 'linux-x64', 'linux-arm64', 'mac-x64', 'mac-arm64'] as const;
export const Platform = z.enum(PLATFORMS);

/**
 * `none`: artifacts are delivered as uploaded; `standard`: bundled with the license gate and
 * update check; `hardened`: standard plus minification and an integrity check of the bundle.
 */
export const PROTECTION_LEVELS = ['none', 'standard', 'hardened'] as const;
export const DELIVERY_MODES = ['all', 'released_only'] as const;

const settings = {
  platforms: z
    .array(Platform)
    .min(1)
    .max(PLATFORMS.length)
    .refine((a) => new Set(a).size === a.length, 'must not repeat a platform'),
  protection_level: z.enum(PROTECTION_LEVELS),
  price_id: z
    .string()
    .regex(/^price_[A-Za-z0-9]{1,120}$/, 'must be a Price ID (price_...), not a Product ID')
    .nullable(),
  delivery_mode: z.enum(DELIVERY_MODES),
  product_key: z.string().trim().min(1).max(200).nullable().describe('Must equal the `app` field of entitlement webhook events'),
  trials_per_computer: z.number().int().min(0).max(100),
  default_device_limit: z.number().int().min(1).max(10_000),
  offline_grace_hours: z.number().int().min(1).max(8760),
  download_limit: z.number().int().min(1).max(1_000_000).nullable().describe('null: the default allowance'),
  app_deactivations_per_30_days: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .describe('Deactivations from the app (`POST /v1/licenses/deactivate`) each license may make in any 30 days; your own device resets are not counted'),
  sold_seat_model: z
    .enum(SEAT_MODELS)
    .describe(
      'The seat model of the licenses your sales create (checkout, the entitlement webhook, marketplace provisioning); trials stay node_locked. node_locked: default_device_limit devices; floating: sold_max_concurrent running at once (docs/protocol.md, Floating licenses)',
    ),
  sold_max_concurrent: MaxConcurrent.nullable().describe('With sold_seat_model floating, and required by it: the seats of each license sold'),
  sold_lease_ttl_minutes: LeaseTtlMinutes.nullable().describe(`With sold_seat_model floating: the lease life of each license sold. Default ${DEFAULT_LEASE_TTL_MINUTES}`),
  sold_meters: Meters.describe(
    'The metered features of the licenses your sales create (checkout, the entitlement webhook, marketplace provisioning, trials included), as `meters` on POST /v1/licenses; replaced as a whole, {} for none. Copied at the sale: licenses already sold keep theirs',
  ),
};

interface SoldSeatFields {
  sold_seat_model?: SeatModel | undefined;
  sold_max_concurrent?: number | null | undefined;
  sold_lease_ttl_minutes?: number | null | undefined;
}

/**
 * The sold seat model is set as a whole, so a body is judged alone: its seats come with the model
 * (an update naming only sold_max_concurrent is refused), floating needs sold_max_concurrent and
 * node_locked takes neither seat field.
 */
function refineSoldSeats(b: SoldSeatFields, ctx: z.RefinementCtx) {
  const refuse = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  const seatsGiven = b.sold_max_concurrent !== undefined || b.sold_lease_ttl_minutes !== undefined;
  if (b.sold_seat_model === undefined) {
    if (seatsGiven) refuse('sold_seat_model', 'give the sold seat model together with its seats');
    return;
  }
  const floating = b.sold_seat_model === 'floating';
  if (floating && b.sold_max_concurrent == null) refuse('sold_max_concurrent', 'required when sold_seat_model is floating');
  if (!floating && b.sold_max_concurrent != null) refuse('sold_max_concurrent', 'sold_seat_model floating only');
  if (!floating && b.sold_lease_ttl_minutes != null) refuse('sold_lease_ttl_minutes', 'sold_seat_model floating only');
}

interface SoldSeatColumns {
  sold_seat_model: SeatModel;
  sold_max_concurrent: number | null;
  sold_lease_ttl_minutes: number | null;
}

/** The stored sold-seat columns a valid body sets: all three with the model (the lease life defaulted), none without it. */
export function soldSeatColumns(b: SoldSeatFields & { sold_seat_model: SeatModel }): SoldSeatColumns;
export function soldSeatColumns(b: SoldSeatFields): Partial<SoldSeatColumns>;
export function soldSeatColumns(b: SoldSeatFields): Partial<SoldSeatColumns> {
  if (b.sold_seat_model === undefined) return {};
  const floating = b.sold_seat_model === 'floating';
  return {
    sold_seat_model: b.sold_seat_model,
    sold_max_concurrent: floating ? b.sold_max_concurrent! : null,
    sold_lease_ttl_minutes: floating ? (b.sold_lease_ttl_minutes ?? DEFAULT_LEASE_TTL_MINUTES) : null,
  };
}

export const CreateAppBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    platforms: settings.platforms,
    protection_level: settings.protection_level.default('standard'),
    price_id: settings.price_id.optional(),
    delivery_mode: settings.delivery_mode.default('all'),
    product_key: settings.product_key.optional(),
    trials_per_computer: settings.trials_per_computer.default(1),
    default_device_limit: settings.default_device_limit.default(2),
    offline_grace_hours: settings.offline_grace_hours.default(72),
    download_limit: settings.download_limit.optional(),
    // The entitlement companion's reset rule (docs/contract.md): 3 in any 30 days per license.
    app_deactivations_per_30_days: settings.app_deactivations_per_30_days.default(3),
    sold_seat_model: settings.sold_seat_model.default('node_locked'),
    sold_max_concurrent: settings.sold_max_concurrent.optional(),
    sold_lease_ttl_minutes: settings.sold_lease_ttl_minutes.optional(),
    sold_meters: settings.sold_meters.default({}),
  })
  .superRefine(refineSoldSeats);

export const UpdateAppBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    ...settings,
    release_current: z.boolean().describe('With delivery_mode released_only: also release the build of the active push if it is not released (else 409 push_target_not_released)'),
  })
  .partial()
  .refine((b) => Object.keys(b).length > 0, 'name at least one field to change')
  .refine((b) => b.release_current === undefined || b.delivery_mode !== undefined, 'release_current: only together with delivery_mode')
  .superRefine(refineSoldSeats);

export const AppIdParams = z.object({ app_id: z.string().max(64) });

export const App = z.object({
  id: z.string(),
  name: z.string(),
  platforms: z.array(Platform),
  protection_level: z.enum(PROTECTION_LEVELS),
  price_id: z.string().nullable(),
  delivery_mode: z.enum(DELIVERY_MODES),
  product_key: z.string().nullable(),
  trials_per_computer: z.number().int(),
  default_device_limit: z.number().int(),
  offline_grace_hours: z.number().int(),
  download_limit: z.number().int().nullable(),
  app_deactivations_per_30_days: z.number().int(),
  sold_seat_model: z.enum(SEAT_MODELS),
  sold_max_concurrent: z.number().int().nullable().describe('Floating: the seats of each license sold; null when node_locked'),
  sold_lease_ttl_minutes: z.number().int().nullable().describe('Floating: the lease life of each license sold; null when node_locked'),
  sold_meters: Meters.describe('The metered features each license sold carries; {} for none'),
  fingerprint_salt: z.string().describe('Pass to the runtime SDK; it salts device fingerprints for this app'),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

export type CreateAppInput = z.infer<typeof CreateAppBody>;
export type UpdateAppInput = z.infer<typeof UpdateAppBody>;
