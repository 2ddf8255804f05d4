import { z } from 'zod';
import { PlatformDownloads } from '../delivery/schemas.js';

/** A checkout session id (`cs_...`); an unsubstituted `{CHECKOUT_SESSION_ID}` is refused here. */
export const CheckoutSessionId = z.string().regex(/^cs_[A-Za-z0-9_]{1,255}$/, 'must be a checkout session id (cs_...)');
export const AppId = z.string().min(1).max(64);

export const EntitlementParams = z.object({ session_id: CheckoutSessionId });
export const EntitlementQuery = z.object({ app_id: AppId });

export const Entitlement = z.object({
  license_key: z.string(),
  download_url: z
    .string()
    .nullable()
    .describe('Signed link to the newest READY build of any platform, valid 7 days. Kept for existing clients: `downloads` has the build of each platform'),
  download_expires_at: z.iso.datetime().nullable(),
  downloads: PlatformDownloads,
  app_name: z.string(),
  app_version: z.string().nullable(),
  customer_email: z.string().nullable(),
  note: z.string().nullable().describe('Set when the download fields are null: no build of the app is READY yet'),
});
