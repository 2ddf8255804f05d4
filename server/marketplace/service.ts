import type { Clock } from '../clock.js';
import { newId } from '../crypto/secrets.js';
import type { PlatformDownload, SoldLicenses } from '../delivery/sold-license.js';
import { mintSoldLicense } from '../licenses/mint.js';
import { assertThat } from '../errors.js';
import { newLicenseKey } from '../licenses/license-key.js';
import type { ProvisionInput } from './schemas.js';
import type { MarketplaceStore } from './store.js';

const DAY_MS = 86_400_000;

export interface Provisioned {
  license_key: string;
  license_id: string;
  app_name: string;
  download_url: string | null;
  /** One link per platform the app ships; `download_url` is the newest of them. */
  downloads: PlatformDownload[];
  /** An earlier call already provisioned this order: its license, unchanged. */
  replayed: boolean;
}

/**
 * Marketplace provisioning (`POST /v1/marketplace/licenses`): one license per marketplace order
 * and app, sold with its fee and delivery email in one transaction.
 */
export function createMarketplace(deps: { store: MarketplaceStore; sold: SoldLicenses; clock: Clock; wakeJobs: () => void }) {
  const { store, sold, clock } = deps;

  return {
    async provision(developerId: string, input: ProvisionInput): Promise<Provisioned> {
      const now = clock.now();
      const config = input.license_config ?? { license_type: 'perpetual' as const, expiry_days: null, device_limit: undefined };
      const { result, wake } = await store.transaction(async (trx) => {
        const app = await store.app(trx, developerId, input.app_id, now);
        assertThat(app, 'APP_NOT_FOUND', 'No such app');
        const replay = async () => {
          const existing = (await store.licenseOfOrder(trx, app.id, input.marketplace_order_id))!;
          // A refunded (revoked) order's license is answered as it is, with no download.
          const offered = existing.status === 'REVOKED' ? null : await sold.downloads(trx, app);
          return {
            license_key: existing.license_key,
            license_id: existing.id,
            app_name: app.name,
            download_url: offered?.download?.download_url ?? null,
            downloads: offered?.downloads ?? [],
            replayed: true,
          };
        };
        // A retry of an order already provisioned is no new sale: it is answered whatever the plan is now.
        if (await store.licenseOfOrder(trx, app.id, input.marketplace_order_id)) return { result: await replay(), wake: false };
        assertThat(
          app.plan === 'pro' || config.license_type === 'trial',
          'PLAN_REQUIRED',
          'Paid sales need an active Pro subscription; the free plan can provision trial licenses only',
        );
        const email = input.customer_email ?? null;
        const license = await mintSoldLicense(
          trx,
          {
            id: newId('lic'),
            developer_id: developerId,
            app_id: app.id,
            license_key: newLicenseKey(),
            license_type: config.license_type,
            device_limit: config.device_limit ?? app.default_device_limit,
            email,
            expires_at: config.expiry_days === null ? null : new Date(now.getTime() + config.expiry_days * DAY_MS),
            features: {},
            source: input.channel,
            marketplace_order_id: input.marketplace_order_id,
          },
          'marketplace_order',
        );
        // A concurrent call for the same order committed first: answer its license.
        if (!license) return { result: await replay(), wake: false };
        const delivery = await sold.chargeAndDeliver(trx, { app, license, email, source: input.channel, licenseType: config.license_type });
        return {
          result: {
            license_key: license.license_key,
            license_id: license.id,
            app_name: app.name,
            download_url: delivery.download?.download_url ?? null,
            downloads: delivery.downloads,
            replayed: false,
          },
          // The fee's report job waits for the runner's next look (billing/store.ts FEE_REPORT_JOB).
          wake: delivery.emailQueued,
        };
      });
      if (wake) deps.wakeJobs();
      return result;
    },
  };
}

export type Marketplace = ReturnType<typeof createMarketplace>;
