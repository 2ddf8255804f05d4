import { RUNTIME_LIMITS_DESCRIPTION, describeLicenseLimit } from '../http/license-limits.js';
import { setRateLimitHeaders } from '../http/rate-window.js';
import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import type { ActivationsService } from './service.js';

const FLOATING_CHECKOUT =
  'A floating license (seat_model floating) checks out a seat for the device: a lease of lease_ttl_minutes, which the token lives as long as ' +
  '(its offline grace); expired leases free their seats by themselves; with every seat leased to other devices, 409 NO_SEAT_AVAILABLE with earliest_expiry.';

export function activationRoutes(activations: ActivationsService) {
  const tag = 'Runtime';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/licenses/activate',
      operationId: 'activateLicense',
      tag,
      auth: 'none',
      rateLimit: 'runtime',
      summary: 'Activate a license key on a device; answers a signed runtime token and the policy',
      description:
        'Checks, first failure wins: unknown or revoked key 401 INVALID_LICENSE_KEY; expired 403 LICENSE_EXPIRED; ' +
        `unknown build 404 BUILD_NOT_FOUND; activations past ${describeLicenseLimit('activation')} 429 (Retry-After). ` +
        'A device already activated re-activates without taking a slot. A new device of a trial license on a computer ' +
        'that used its trials 403 TRIAL_ALREADY_USED; a new device over the limit 403 DEVICE_LIMIT_EXCEEDED. ' +
        `A trial created without an expiry starts its 14 days at its first activation. ${FLOATING_CHECKOUT} ${RUNTIME_LIMITS_DESCRIPTION}`,
      body: s.ActivateBody,
      response: s.ActivationResult,
      errors: [401, 403, 404, 409],
      handler: ({ body, response }) => activations.activate(body, (decision) => setRateLimitHeaders(response, decision)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/refresh',
      operationId: 'refreshRuntimeToken',
      tag,
      auth: 'none',
      rateLimit: 'runtime',
      summary: 'Refresh the runtime token of an activated device, by its token or by license key and fingerprint',
      description:
        'Answers like activation. Fails 401 INVALID_LICENSE_KEY once the license is revoked, 403 LICENSE_EXPIRED once it expired, ' +
        `429 (Retry-After) past ${describeLicenseLimit('refresh')}, ` +
        '403 DEVICE_NOT_ACTIVATED once the device was reset, 401 INVALID_RUNTIME_TOKEN for a token this authority did not sign. ' +
        `An expired token is accepted if genuine. A floating license's refresh is its heartbeat: it renews the device's live lease; ` +
        `a lapsed one is checked out again. ${FLOATING_CHECKOUT} ${RUNTIME_LIMITS_DESCRIPTION}`,
      body: s.RefreshBody,
      response: s.ActivationResult,
      errors: [401, 403, 409],
      handler: ({ body, response }) => activations.refresh(body, (decision) => setRateLimitHeaders(response, decision)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/deactivate',
      operationId: 'deactivateDevice',
      tag,
      auth: 'none',
      rateLimit: 'runtime',
      summary: "Deactivation from the app: frees the seat of the device the runtime token names, counted against the app's quota",
      description:
        'Idempotent: a device no longer activated on the license answers 200 with `deactivated: false`, not counted. A device still ' +
        "activated past the app's `app_deactivations_per_30_days` (default 3) in any 30 days: 429 DEACTIVATION_QUOTA_EXCEEDED with " +
        '`Retry-After` (seconds until the oldest counted one leaves the window), nothing changed. 401 INVALID_RUNTIME_TOKEN for a token ' +
        'this authority did not sign (an expired one is accepted if genuine), 401 INVALID_LICENSE_KEY once its license is deleted. ' +
        "Each deactivation is recorded in the license's history (`GET /v1/licenses/{license_id}/deactivations`) as `app`.",
      body: s.DeactivateBody,
      response: s.DeactivationResult,
      errors: [401, 429],
      handler: ({ body }) => activations.deactivate(body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/checkin',
      operationId: 'checkinLicenseSeat',
      tag,
      auth: 'none',
      rateLimit: 'runtime',
      summary: "Check a floating license's seat back in: the device's lease ends now, freeing the seat for another device",
      description:
        'Sent by the SDK when the app closes. 401 INVALID_RUNTIME_TOKEN for a token this authority did not sign; otherwise 204, ' +
        'whether or not the device held a lease (idempotent; nothing changes for a node-locked license). An expired token is accepted if genuine.',
      body: s.CheckinBody,
      errors: [401],
      noContent: 'Checked in',
      handler: async ({ body }) => activations.checkin(body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/tamper-report',
      operationId: 'reportTamper',
      tag,
      auth: 'none',
      rateLimit: 'runtime',
      summary: 'A protected build found modified at start: counted on the license (tamper_reports) the token names',
      description:
        'Sent by the runtime engine when its signed integrity check fails or its encrypted app does not open. 401 INVALID_RUNTIME_TOKEN ' +
        'for a token this authority did not sign; otherwise 204, counted when the device is activated on the license and the build is ' +
        "one of the license's app, at most once per device and clock hour (`last_tamper_report_at` moves with every report heard).",
      body: s.TamperReportBody,
      errors: [401],
      noContent: 'Received',
      handler: async ({ body }) => activations.reportTamper(body),
    }),
  ];
}
