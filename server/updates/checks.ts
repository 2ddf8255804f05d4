import { DOCUMENT_TYPES, type UpdateManifestClaims } from '@latchkey/runtime-sdk/protocol';
import type { DownloadLinks } from '../builds/download-link.js';
import type { Clock } from '../clock.js';
import { isForeignKeyViolation } from '../db/knex.js';
import { RequestError, assertThat } from '../errors.js';
import { enforceLicenseLimit, type LicenseLimits, type RateLimitReport } from '../http/license-limits.js';
import type { Keyring } from '../signing/keyring.js';
import { pushDecision } from './eligibility.js';
import type { UpdateCheckInput, UpdateReportInput } from './schemas.js';
import type { CountedLicense, UpdatesStore } from './store.js';

/**
 * How long a manifest is good for after it is signed: the popup is answered and the download
 * started well within it, while a captured manifest soon stops working (freeze and replay). The
 * download link inside lives days, so a slow download is not cut off.
 */
export const MANIFEST_LIFETIME_SECONDS = 30 * 60;

/**
 * The runtime's credential, as activation refresh treats it: an unknown or revoked key, or a key of
 * another app (told apart from nothing, so keys cannot be probed across apps), is 401.
 */
function assertLicenseOfApp<T extends CountedLicense>(row: T | undefined): asserts row is T {
  if (!row || row.status === 'REVOKED') throw new RequestError('INVALID_LICENSE_KEY', 'The license key is invalid or has been revoked');
}

const assertActivatedDevice = (row: { device_known: boolean }) =>
  assertThat(row.device_known, 'DEVICE_NOT_ACTIVATED', 'This device is not activated on the license; activate it first');

const buildNotFound = () => new RequestError('BUILD_NOT_FOUND', 'No such build of this app');

/** The update check and the adoption report of protected apps: docs/contract.md push rules 5 and 9. */
export function createUpdateChecks(deps: { store: UpdatesStore; clock: Clock; keyring: Keyring; links: Pick<DownloadLinks, 'createForLicense'>; limits: LicenseLimits }) {
  const { store, clock, keyring, links, limits } = deps;

  return {
    /**
     * A signed manifest when a push applies to this device, else nothing (204). Each check within
     * the license's limit records the device's launch (platform, engine, running version and build,
     * each as sent, else kept as recorded: the check needs only the key and the fingerprint); past it,
     * 429. `reportLimit` gets the license's count once the key names a usable license (a revoked
     * key must read like one that never existed), for the RateLimit headers.
     */
    async check(input: UpdateCheckInput, reportLimit: RateLimitReport): Promise<{ manifest: string } | undefined> {
      const now = clock.now();
      const checks = limits.window('update_check');
      const row = await store.check(input, checks, now);
      assertLicenseOfApp(row);
      // Before the device: a check past the limit recorded no launch, so the device reads as unknown.
      enforceLicenseLimit(checks.decideFor(row.hits, row.device_limit), reportLimit, 'update checks');
      assertActivatedDevice(row);
      // Inactive licenses receive no pushes (docs/contract.md); a lapsed one is not an error for the app.
      if (row.status !== 'ACTIVE' || row.build_id === null) return undefined;
      const decision = pushDecision({
        targetBuildId: row.build_id,
        targetPlatform: row.platform,
        devicePlatform: row.device_platform,
        engineVersion: row.device_engine_version,
        runningBuildId: row.running_build_id,
        adoption: row.adoption,
      });
      if (decision === 'running' && row.adoption !== 'installed') await recordInstalled(row.license_id, input.device_fingerprint, row.build_id, now);
      if (decision !== 'offer') return undefined;
      const iat = Math.floor(now.getTime() / 1000);
      const claims: UpdateManifestClaims = {
        iss: 'latchkey',
        sub: row.license_id,
        app_id: row.app_id,
        // The device's own label, which its SDK checks; a device of no known platform is offered only a build for every OS.
        platform: row.device_platform ?? row.platform,
        device: input.device_fingerprint,
        build_id: row.build_id,
        version: row.version ?? row.build_id,
        sha256: row.sha256,
        length: row.protected_size_bytes,
        // Bound to the license: a store license's installer downloads count against its allowance (docs/contract.md, Limits).
        url: links.createForLicense(row.build_id, row.license_id),
        release_notes: row.release_notes,
        serial: row.serial,
        iat,
        exp: iat + MANIFEST_LIFETIME_SECONDS,
      };
      return { manifest: keyring.sign(DOCUMENT_TYPES.updateManifest, claims) };
    },

    /** Idempotent: a second identical report changes nothing. 429 past the license's limit of reports, as `check`. */
    async report(input: UpdateReportInput, reportLimit: RateLimitReport): Promise<void> {
      const reports = limits.window('update_report');
      const row = await store.report(input, reports, clock.now()).catch((err: unknown) => {
        // The build was deleted between the statement's read and its write.
        throw isForeignKeyViolation(err) ? buildNotFound() : err;
      });
      assertLicenseOfApp(row);
      enforceLicenseLimit(reports.decideFor(row.hits, row.device_limit), reportLimit, 'update reports');
      assertActivatedDevice(row);
      if (!row.build_known) throw buildNotFound();
    },
  };

  async function recordInstalled(licenseId: string, fingerprintHash: string, buildId: string, now: Date): Promise<void> {
    try {
      await store.recordInstalled(licenseId, fingerprintHash, buildId, now);
    } catch (err) {
      // The target build was deleted meanwhile, and the push with it: nothing left to count.
      if (!isForeignKeyViolation(err)) throw err;
    }
  }
}

export type UpdateChecks = ReturnType<typeof createUpdateChecks>;
