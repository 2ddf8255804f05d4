import type { Clock } from '../clock.js';
import { newId } from '../crypto/secrets.js';
import { isUniqueViolation } from '../db/knex.js';
import type { Page } from '../http/pagination.js';
import { RequestError, assertThat } from '../errors.js';
import { newLicenseKey } from './license-key.js';
import { seatColumns } from './rules.js';
import type { CreateLicenseInput, ListLicensesFilter, SetDownloadLimitInput, SetSeatsInput } from './schemas.js';
import type { LicenseRead, LicensesStore } from './store.js';

const DAY_MS = 86_400_000;
// Two keys colliding is about one in 10^23; retrying covers it without a read before every insert.
const KEY_ATTEMPTS = 3;

/** Where a license came from; docs/contract.md shows it in the portal. */
export type LicenseSource = 'api';

function expiryOf(input: CreateLicenseInput, now: Date): Date | null {
  if (input.expiry_days !== undefined) return new Date(now.getTime() + input.expiry_days * DAY_MS);
  if (input.expires_at === undefined) return null;
  const at = new Date(input.expires_at);
  if (at.getTime() <= now.getTime()) throw new RequestError('VALIDATION_FAILED', 'body.expires_at: must be in the future');
  return at;
}

export function createLicensesService(deps: { store: LicensesStore; clock: Clock }) {
  const { store, clock } = deps;

  async function get(developerId: string, licenseId: string): Promise<LicenseRead> {
    const license = await store.find(developerId, licenseId, clock.now());
    assertThat(license, 'LICENSE_NOT_FOUND', 'No such license');
    return license;
  }

  return {
    get,

    async getWithDevices(developerId: string, licenseId: string) {
      const license = await get(developerId, licenseId);
      const [devices, seatsInUse] = await Promise.all([store.listDevices(license.id), license.seat_model === 'floating' ? store.seatsInUse(license.id, clock.now()) : null]);
      return { license, devices, seatsInUse };
    },

    list: (developerId: string, filter: ListLicensesFilter) => store.list(developerId, filter, clock.now()),

    async create(developerId: string, input: CreateLicenseInput, source: LicenseSource): Promise<LicenseRead> {
      const now = clock.now();
      const expiresAt = expiryOf(input, now);
      const app = await store.findAppForCreation(developerId, input.app_id, now);
      assertThat(app, 'APP_NOT_FOUND', 'No such app');
      assertThat(
        app.plan === 'pro' || input.license_type === 'trial',
        'PLAN_REQUIRED',
        'The free plan can issue trial licenses only; upgrade to Pro for perpetual and subscription licenses',
      );
      for (let attempt = 1; ; attempt++) {
        try {
          return await store.insert(
            {
              id: newId('lic'),
              developer_id: developerId,
              app_id: input.app_id,
              license_key: newLicenseKey(),
              license_type: input.license_type,
              ...seatColumns(input, app.default_device_limit),
              email: input.email ?? null,
              expires_at: expiresAt,
              features: input.features,
              meters: input.meters,
              source,
              payment_session_id: null,
              download_limit: input.download_limit ?? null,
            },
            now,
          );
        } catch (err) {
          if (attempt >= KEY_ATTEMPTS || !isUniqueViolation(err, 'licenses_license_key_key')) throw err;
        }
      }
    },

    async revoke(developerId: string, licenseId: string): Promise<LicenseRead> {
      const license = await store.revoke(developerId, licenseId, clock.now());
      assertThat(license, 'LICENSE_NOT_FOUND', 'No such license');
      return license;
    },

    async setDownloadLimit(developerId: string, licenseId: string, input: SetDownloadLimitInput): Promise<LicenseRead> {
      const license = await store.setDownloadLimit(developerId, licenseId, input.download_limit, clock.now());
      assertThat(license, 'LICENSE_NOT_FOUND', 'No such license');
      return license;
    },

    /** A floating license's seats and lease TTL; 404 for a license not the developer's, 409 for a node-locked one. */
    async setSeats(developerId: string, licenseId: string, input: SetSeatsInput): Promise<LicenseRead> {
      const license = await store.setSeats(developerId, licenseId, input, clock.now());
      if (license) return license;
      await get(developerId, licenseId);
      throw new RequestError('LICENSE_NOT_FLOATING', 'The license is node_locked: its devices are limited by device_limit, not by seats');
    },

    async resetDevices(developerId: string, licenseId: string): Promise<number> {
      const removed = await store.removeDevices(developerId, licenseId, clock.now());
      assertThat(removed !== undefined, 'LICENSE_NOT_FOUND', 'No such license');
      return removed;
    },

    /** The license's deactivation history, newest first; another developer's license is not found. */
    async listDeactivations(developerId: string, licenseId: string, page: Page) {
      const license = await get(developerId, licenseId);
      return store.listDeactivations(license.id, page);
    },
  };
}

export type LicensesService = ReturnType<typeof createLicensesService>;
