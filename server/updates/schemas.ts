import { FINGERPRINT_PATTERN, UPDATE_FAILURE_REASONS, UPDATE_REPORT_EVENTS, type UpdateCheckRequest, type UpdateReportRequest } from '@latchkey/runtime-sdk/protocol';
import { z } from 'zod';
import { Platform } from '../apps/schemas.js';
import { BUILD_PLATFORMS, Version } from '../builds/schemas.js';
import { LicenseKeyInput } from '../licenses/license-key.js';
import { MIN_UPDATE_ENGINE } from './engine-version.js';

/** Release notes ride in every manifest and fill a popup: a few pages at most. */
export const MAX_RELEASE_NOTES_CHARS = 10_000;

// Plain text, shown verbatim, also in a terminal when no dialog is available: line breaks and tabs
// are text, other control characters (escape sequences) could rewrite what the customer sees.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

const BuildId = z.string().min(1).max(64);

const targetBuildId = (description: string) => BuildId.optional().describe(description);

const releaseNotes = z
  .string()
  .max(MAX_RELEASE_NOTES_CHARS)
  .refine((s) => !CONTROL_CHARACTERS.test(s), 'must be plain text: no control characters other than tabs and line breaks')
  .default('')
  .describe('Plain text, shown verbatim in the update popup; may be empty');

export const PushAppUpdateBody = z.strictObject({
  target_build_id: targetBuildId('A READY build of the app (released, under delivery mode released_only); default: the newest such build'),
  release_notes: releaseNotes,
  release_current: z.boolean().default(false).describe('Under released_only: release the named target if it is not released yet, instead of answering 409 build_not_released'),
});
export type PushAppUpdateInput = z.infer<typeof PushAppUpdateBody>;

export const PushLicenseUpdateBody = z.strictObject({
  target_build_id: targetBuildId("A READY build of the license's app, released or not; default: the newest READY build"),
  release_notes: releaseNotes,
});
export type PushLicenseUpdateInput = z.infer<typeof PushLicenseUpdateBody>;

const count = z.number().int();

export const DeviceCounts = z.object({
  installed: count.describe('Devices that reported the target build installed, or checked while running it'),
  skipped: count.describe('Devices whose user chose Skip this version for the target build'),
  failed: count.describe('Devices whose last install of the target build failed (they run their old version and try again after 1, 6 and 24 hours)'),
  pending: count.describe('Every other device: not asked yet, asked later, on another operating system than the build, or unable'),
  unable: count.describe(`Pending devices on a runtime engine older than ${MIN_UPDATE_ENGINE}: they are offered nothing until their customer installs a fresh build`),
});
export type DeviceCounts = z.infer<typeof DeviceCounts>;

export const ActivePush = z.object({
  target_build_id: z.string(),
  version: z.string().nullable().describe("The target build's version label"),
  platform: z.enum(BUILD_PLATFORMS).describe("Devices on this platform's operating system, any architecture, are offered the build (every device, for cross_platform)"),
  release_notes: z.string(),
  serial: count.describe('Monotonic across every push of the authority; a newer push has a higher serial'),
  pushed_at: z.iso.datetime(),
  devices: DeviceCounts.describe('Devices of the active licenses this push governs, by adoption state'),
  complete: z.boolean().describe('No device is pending or failed (a failed device tries again)'),
});
export type ActivePush = z.infer<typeof ActivePush>;

export const AppPushStatus = z.object({
  app_id: z.string(),
  push: ActivePush.nullable().describe('null: the app has no active push'),
});

export const LicensePushStatus = z.object({
  license_id: z.string(),
  app_id: z.string(),
  push: ActivePush.nullable().describe('null: the license has no push of its own (the app push, if any, applies)'),
});

// Runtime bodies use z.object (unknown fields dropped, not refused), like activation: apps in the
// field run SDKs older and newer than this server, and a new optional field must not lock them out.

const runtimeCredential = {
  license_key: LicenseKeyInput,
  device_fingerprint: z.string().regex(FINGERPRINT_PATTERN, 'must be the SDK fingerprint hash: 64 lower-case hex characters'),
};

const AppId = z.string().min(1).max(64);

const EngineVersion = Version.describe(`Runtime engine of the running build; older than ${MIN_UPDATE_ENGINE} (or not six numeric parts) gets no updates`);

/**
 * docs/contract.md push rule 9: the app sends the license key and the fingerprint hash; the app comes
 * from the license, the rest from the device's record. What else an SDK sends is optional, updates
 * the record, and is used in its place.
 */
export const UpdateCheckBody = z.object({
  ...runtimeCredential,
  app_id: AppId.optional().describe("Optional: the license's app; a key of another app reads as unknown (401)"),
  build_id: BuildId.nullable().optional().describe('The running build; null for an app embedding the SDK without a protected build; omitted: the one the device last reported'),
  version: Version.optional().describe('The running app version; omitted: the one on record'),
  platform: Platform.optional().describe("The device's platform; omitted: the one recorded at activation or an earlier check"),
  engine_version: EngineVersion.optional().describe('Omitted: the one on record; none on record gets no updates'),
}) satisfies z.ZodType<UpdateCheckRequest>;
export type UpdateCheckInput = z.infer<typeof UpdateCheckBody>;

export type AdoptionEvent = (typeof UPDATE_REPORT_EVENTS)[number];

export const UpdateReportBody = z
  .object({
    ...runtimeCredential,
    app_id: AppId,
    event: z
      .enum(UPDATE_REPORT_EVENTS)
      .describe('installed: sent on the first start of the new build; skipped: the user chose Skip this version; failed: installing the build offered failed'),
    reason: z
      .enum(UPDATE_FAILURE_REASONS)
      .optional()
      .describe(
        'With failed only, and required there: download_failed, package_rejected (not the signed bytes), disk_failed, install_failed (a step refused and undone), rolled_back (an interrupted install undone at the next start)',
      ),
    build_id: BuildId.describe('installed: the running build; skipped and failed: the build offered'),
    version: Version.describe('The running app version; recorded as the installed version with `installed`'),
    platform: Platform.optional(),
    engine_version: EngineVersion.optional(),
  })
  .refine((body) => (body.event === 'failed') === (body.reason !== undefined), {
    path: ['reason'],
    message: 'is required with event failed and not allowed with another event',
  }) satisfies z.ZodType<UpdateReportRequest>;
export type UpdateReportInput = z.infer<typeof UpdateReportBody>;

export const UpdateManifest = z.object({
  manifest: z.string().describe('Compact JWS (EdDSA, typ latchkey-update-manifest+jwt) of the update manifest claims; verify with the JWK Set at /v1/public/keys'),
});
