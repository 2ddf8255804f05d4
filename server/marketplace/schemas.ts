import { z } from 'zod';
import { PlatformDownloads } from '../delivery/schemas.js';
import { LICENSE_TYPES } from '../licenses/rules.js';

/** docs/contract.md: "string naming the marketplace (lowercase label)"; it becomes the license's `source`. */
export const Channel = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,39}$/, 'must be a lowercase label (a-z, 0-9, _ . -; at most 40 characters)')
  .describe('The marketplace, as a lowercase label (e.g. `gumroad`, `appsumo`, `own_store`); stored as the license `source`');

export const LicenseConfig = z
  .strictObject({
    device_limit: z.number().int().min(1).max(10_000).optional().describe("Default: the app's default_device_limit"),
    expiry_days: z.number().int().min(1).max(36_500).nullable().default(null).describe('null (default): perpetual; a trial with null runs 14 days from its first activation'),
    license_type: z.enum(LICENSE_TYPES).default('perpetual').describe('The free plan may provision trial licenses only'),
  })
  .describe("Optional; default: a perpetual license with the app's default device limit");

export const ProvisionBody = z.strictObject({
  app_id: z.string().min(1).max(64),
  channel: Channel,
  customer_email: z.email().max(254).optional().describe('When present and a READY build exists, the delivery email is sent to it'),
  marketplace_order_id: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .describe('The order at the marketplace. Required: the same order id for the same app answers the same license (no second license, no second fee)'),
  license_config: LicenseConfig.optional(),
});
export type ProvisionInput = z.infer<typeof ProvisionBody>;

export const ProvisionedLicense = z.object({
  license_key: z.string(),
  license_id: z.string(),
  app_name: z.string(),
  download_url: z
    .string()
    .nullable()
    .describe(
      'Signed link to the newest READY build of any platform, valid 7 days; null while no build is READY. Kept for existing clients: `downloads` has the build of each platform',
    ),
  downloads: PlatformDownloads,
});
