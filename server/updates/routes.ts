import type { z } from 'zod';
import { AppIdParams } from '../apps/schemas.js';
import { RUNTIME_LIMITS_DESCRIPTION, describeLicenseLimit } from '../http/license-limits.js';
import { setRateLimitHeaders } from '../http/rate-window.js';
import { defineRoute } from '../http/route.js';
import { LicenseIdParams } from '../licenses/schemas.js';
import { MANIFEST_LIFETIME_SECONDS, type UpdateChecks } from './checks.js';
import { MIN_UPDATE_ENGINE } from './engine-version.js';
import { PUSH_CONFLICT_REASONS } from './rules.js';
import * as s from './schemas.js';
import type { LicensePushState, PushService, PushState } from './service.js';

const pushView = (state: PushState | null): z.input<typeof s.ActivePush> | null =>
  state && {
    target_build_id: state.push.build_id,
    version: state.push.version,
    platform: state.push.platform,
    release_notes: state.push.release_notes,
    serial: state.push.serial,
    pushed_at: state.push.pushed_at.toISOString(),
    devices: state.devices,
    // A failed device tries again: it is not done with the push either.
    complete: state.devices.pending === 0 && state.devices.failed === 0,
  };

const licensePushView = (licenseId: string, { appId, state }: LicensePushState) => ({ license_id: licenseId, app_id: appId, push: pushView(state) });

const CONFLICTS = `409 PUSH_CONFLICT carries \`reason\` (${PUSH_CONFLICT_REASONS.join(', ')})`;

export function updateRoutes(pushes: PushService, checks: UpdateChecks) {
  const app = { tag: 'Updates', auth: 'developer', rateLimit: 'apps' } as const;
  const license = { tag: 'Updates', auth: 'developer', rateLimit: 'general' } as const;
  const runtime = { tag: 'Runtime', auth: 'none', rateLimit: 'runtime' } as const;
  return [
    defineRoute({
      ...app,
      method: 'post',
      path: '/v1/apps/{app_id}/push-update',
      operationId: 'pushAppUpdate',
      scope: 'builds',
      summary: "Push a build to the app's customers; replaces the active push with a new, higher serial",
      description:
        'Checks, first failure wins: app 404; Pro plan 403 PLAN_REQUIRED; `target_build_id` of another app or missing 404 ' +
        'BUILD_NOT_FOUND, not READY 409 BUILD_NOT_READY; without one, the newest READY build (released, under delivery mode ' +
        'released_only), none 409 NO_READY_BUILD; a Windows or macOS target whose package was not replaced with a signed one ' +
        '(PUT .../builds/{build_id}/signed-package: Replace with Signed Package) 409 reason build_not_signed (a macOS launcher ' +
        'archive excepted: its runtime keeps the signature of Node); under released_only an unreleased target 409 reason build_not_released, ' +
        "unless `release_current: true`, which releases it; a target created before the active push's 409 reason " +
        'older_than_active_target (the detail names the active target; clear the push first); no ACTIVE license 409 ' +
        `NO_ACTIVE_LICENSE. ${CONFLICTS}. Per-license pushes of the app's licenses are cleared: this later push overrides them. ` +
        `Devices are offered the build at their next update check if their operating system is the build's, whatever the architecture (every device, for cross_platform) ` +
        `and their engine is ${MIN_UPDATE_ENGINE} or newer.`,
      params: AppIdParams,
      body: s.PushAppUpdateBody,
      response: s.AppPushStatus,
      errors: [403, 404, 409],
      handler: async ({ actor, params, body }) => ({ app_id: params.app_id, push: pushView(await pushes.pushApp(actor.developerId, params.app_id, body)) }),
    }),
    defineRoute({
      ...app,
      method: 'get',
      path: '/v1/apps/{app_id}/push-update',
      operationId: 'getAppPush',
      scope: 'read',
      summary: "The app's active push (null when none) and its devices by adoption state",
      description:
        "Devices counted: those of the app's ACTIVE licenses that have no per-license push of their own. `complete` stays false " +
        'while any is pending, devices on another platform than the build and devices unable to update included.',
      params: AppIdParams,
      response: s.AppPushStatus,
      errors: [404],
      handler: async ({ actor, params }) => ({ app_id: params.app_id, push: pushView(await pushes.getAppPush(actor.developerId, params.app_id)) }),
    }),
    defineRoute({
      ...app,
      method: 'delete',
      path: '/v1/apps/{app_id}/push-update',
      operationId: 'clearAppPush',
      scope: 'builds',
      summary: 'Clear the active push; 204 also when there is none',
      description: 'Devices that installed the pushed build keep it; devices that skipped it stay on theirs. Per-license pushes stay.',
      params: AppIdParams,
      errors: [404],
      handler: ({ actor, params }) => pushes.clearAppPush(actor.developerId, params.app_id),
    }),
    defineRoute({
      ...license,
      method: 'post',
      path: '/v1/licenses/{license_id}/push-update',
      operationId: 'pushLicenseUpdate',
      scope: 'builds',
      summary: 'Push a build to one license (portal operation); it may be unreleased',
      description:
        'Checks, first failure wins: license 404; Pro plan 403 PLAN_REQUIRED; a license that is not ACTIVE 409 NO_ACTIVE_LICENSE; ' +
        "`target_build_id` not a build of the license's app 404 BUILD_NOT_FOUND, not READY 409 BUILD_NOT_READY; without one, the " +
        'newest READY build, none 409 NO_READY_BUILD; a Windows or macOS target not yet replaced with a signed package 409 ' +
        'PUSH_CONFLICT reason build_not_signed, as for an app push. It applies to the license in place of the app push until a later app push ' +
        'overrides (and clears) it.',
      params: LicenseIdParams,
      body: s.PushLicenseUpdateBody,
      response: s.LicensePushStatus,
      errors: [403, 404, 409],
      handler: async ({ actor, params, body }) => licensePushView(params.license_id, await pushes.pushLicense(actor.developerId, params.license_id, body)),
    }),
    defineRoute({
      ...license,
      method: 'get',
      path: '/v1/licenses/{license_id}/push-update',
      operationId: 'getLicensePush',
      scope: 'read',
      summary: "The license's own push (null when none) and its devices by adoption state",
      params: LicenseIdParams,
      response: s.LicensePushStatus,
      errors: [404],
      handler: async ({ actor, params }) => licensePushView(params.license_id, await pushes.getLicensePush(actor.developerId, params.license_id)),
    }),
    defineRoute({
      ...license,
      method: 'delete',
      path: '/v1/licenses/{license_id}/push-update',
      operationId: 'clearLicensePush',
      scope: 'builds',
      summary: "Clear the license's own push (the app push applies to it again); 204 also when there is none",
      params: LicenseIdParams,
      errors: [404],
      handler: ({ actor, params }) => pushes.clearLicensePush(actor.developerId, params.license_id),
    }),
    defineRoute({
      ...runtime,
      method: 'post',
      path: '/v1/updates/check',
      operationId: 'checkForUpdate',
      summary: 'Update check of a protected app: a signed manifest when a push applies to this device',
      description:
        "The license key and the fingerprint hash suffice: the app is the license's, the platform, engine and running build the " +
        "device's record; the other fields are optional and, when sent, update the record first. " +
        'Checks, first failure wins: unknown or revoked key, or a key of another app, 401 INVALID_LICENSE_KEY; checks past ' +
        `${describeLicenseLimit('update_check')} 429 (Retry-After), recording nothing; device not activated on the license ` +
        '403 DEVICE_NOT_ACTIVATED. Then 204 when the license is not ACTIVE (expired licenses receive no pushes), no ' +
        `push applies, the engine is older than ${MIN_UPDATE_ENGINE} or unknown (the device counts as unable), the device's operating system is not ` +
        "the build's (architecture aside; every device for cross_platform), the device runs the target build (it counts as installed), or it skipped or installed " +
        "that build. The push that applies is the newer (by serial) of the app push and the license's own. The manifest is bound to " +
        `app, platform, license and device, expires ${MANIFEST_LIFETIME_SECONDS / 60} minutes after issue, and names the build's ` +
        "SHA-256, size and a download link signed for the build and the license (/v1/installer-downloads; a store license's " +
        "downloads through it count against its download allowance). Every check within the limit records the device's platform, engine and " +
        `running version and build it sends. ${RUNTIME_LIMITS_DESCRIPTION}`,
      body: s.UpdateCheckBody,
      response: s.UpdateManifest,
      errors: [401, 403],
      noContent: 'No update for this device now',
      handler: ({ body, response }) => checks.check(body, (decision) => setRateLimitHeaders(response, decision)),
    }),
    defineRoute({
      ...runtime,
      method: 'post',
      path: '/v1/updates/report',
      operationId: 'reportUpdate',
      summary: 'Adoption report of a protected app: a build installed (first start of it), skipped (Skip this version) or failed to install',
      description:
        'Checks, first failure wins: the key as in the update check (401); reports past ' +
        `${describeLicenseLimit('update_report')} 429 (Retry-After), recording nothing; the device as in the update check (403); ` +
        '`build_id` not a build of the app 404 BUILD_NOT_FOUND. `reason` is required with `failed` and refused with the other ' +
        "events (400). Records `version` as the device's app version (the installed one, with `installed`). Idempotent; a later " +
        'install replaces a skip or a failure, a skip replaces a failure, a failure replaces an earlier one; nothing replaces an ' +
        'install. A failed device is offered the build again at its checks (the runtime waits 1, 6 and 24 hours between ' +
        `tries, then for a newer push). ${RUNTIME_LIMITS_DESCRIPTION}`,
      body: s.UpdateReportBody,
      errors: [401, 403, 404],
      handler: ({ body, response }) => checks.report(body, (decision) => setRateLimitHeaders(response, decision)),
    }),
  ];
}
