import { z } from 'zod';

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
};

export const CreateAppBody = z.strictObject({
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
});

export const UpdateAppBody = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    ...settings,
    release_current: z.boolean().describe('With delivery_mode released_only: also release the build of the active push if it is not released (else 409 push_target_not_released)'),
  })
  .partial()
  .refine((b) => Object.keys(b).length > 0, 'name at least one field to change')
  .refine((b) => b.release_current === undefined || b.delivery_mode !== undefined, 'release_current: only together with delivery_mode');

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
  fingerprint_salt: z.string().describe('Pass to the runtime SDK; it salts device fingerprints for this app'),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

export type CreateAppInput = z.infer<typeof CreateAppBody>;
export type UpdateAppInput = z.infer<typeof UpdateAppBody>;
