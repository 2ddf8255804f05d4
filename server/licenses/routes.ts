import { PageQuery, setPageHeaders } from '../http/pagination.js';
import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import type { LicensesService } from './service.js';
import type { DeviceRow, LicenseRead } from './store.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

export const licenseView = (l: LicenseRead) => ({
  license_id: l.id,
  license_key: l.license_key,
  app_id: l.app_id,
  status: l.effective_status,
  license_type: l.license_type,
  device_limit: l.device_limit,
  seat_model: l.seat_model,
  max_concurrent: l.seat_model === 'floating' ? l.device_limit : null,
  lease_ttl_minutes: l.lease_ttl_minutes,
  email: l.email,
  expires_at: iso(l.expires_at),
  features: l.features,
  meters: l.meters,
  source: l.source,
  payment_session_id: l.payment_session_id,
  download_limit: l.download_limit,
  revoked_at: iso(l.revoked_at),
  tamper_reports: l.tamper_reports,
  last_tamper_report_at: iso(l.last_tamper_report_at),
  created_at: l.created_at.toISOString(),
});

const deviceView = ({ license_id: _license, first_seen_at, last_seen_at, ...rest }: DeviceRow) => ({
  ...rest,
  first_seen_at: first_seen_at.toISOString(),
  last_seen_at: last_seen_at.toISOString(),
});

export function licenseRoutes(licenses: LicensesService) {
  const tag = 'Licenses';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/licenses',
      operationId: 'createLicense',
      scope: 'licenses',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Create a license key for one of your apps',
      body: s.CreateLicenseBody,
      response: s.License,
      status: 201,
      errors: [403, 404],
      handler: async ({ actor, body }) => licenseView(await licenses.create(actor.developerId, body, 'api')),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/licenses',
      operationId: 'listLicenses',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'List your licenses, oldest first',
      query: s.ListLicensesQuery,
      response: s.License.array(),
      paginated: true,
      handler: async ({ actor, query, ctx }) => {
        const { rows, total } = await licenses.list(actor.developerId, query);
        setPageHeaders(ctx, query, total);
        return rows.map(licenseView);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/licenses/{license_id}',
      operationId: 'getLicense',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'A license with its activated devices',
      params: s.LicenseIdParams,
      response: s.LicenseWithDevices,
      errors: [404],
      handler: async ({ actor, params }) => {
        const { license, devices, seatsInUse } = await licenses.getWithDevices(actor.developerId, params.license_id);
        return { ...licenseView(license), seats_in_use: seatsInUse, devices: devices.map(deviceView) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/{license_id}/revoke',
      operationId: 'revokeLicense',
      scope: 'licenses',
      securesAccount: true,
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Revoke a license at once: its next activation or token refresh fails',
      params: s.LicenseIdParams,
      response: s.License,
      errors: [404],
      handler: async ({ actor, params }) => licenseView(await licenses.revoke(actor.developerId, params.license_id)),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/licenses/{license_id}/download-limit',
      operationId: 'setLicenseDownloadLimit',
      scope: 'licenses',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: "Set the license's download limit (portal: Download limit; CLI: licenses set-download-limit)",
      description:
        'Body `download_limit`: an integer from 1 to 1000000, or null for the default allowance. The limit counts the downloads of the ' +
        "license's permanent delivery page and of its installed app's updates together, and replaces the default allowance " +
        '(10 per build offered to the store): it does not add to it. Takes effect at the next download. 400 VALIDATION_FAILED for ' +
        'another value or field; 404 for a license that is not yours.',
      params: s.LicenseIdParams,
      body: s.SetDownloadLimitBody,
      response: s.License,
      errors: [404],
      handler: async ({ actor, params, body }) => licenseView(await licenses.setDownloadLimit(actor.developerId, params.license_id, body)),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/licenses/{license_id}/seats',
      operationId: 'setLicenseSeats',
      scope: 'licenses',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: "Set a floating license's seats (max_concurrent) and lease TTL",
      description:
        'Body `max_concurrent` (1 to 10000) and optional `lease_ttl_minutes` (3 to 1440; omitted: unchanged). Fewer seats than leases in use: ' +
        'the running copies keep theirs until they check in or their leases lapse, and new check-outs wait until the leases in use are fewer ' +
        "than the seats. A new TTL applies from each lease's next renewal. 409 LICENSE_NOT_FLOATING for a node-locked license; 404 for a " +
        'license that is not yours.',
      params: s.LicenseIdParams,
      body: s.SetSeatsBody,
      response: s.License,
      errors: [404, 409],
      handler: async ({ actor, params, body }) => licenseView(await licenses.setSeats(actor.developerId, params.license_id, body)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/{license_id}/reset-devices',
      operationId: 'resetLicenseDevices',
      scope: 'licenses',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Deactivate every device of a license; a computer that used a free trial still cannot start another',
      description: "Each device removed is recorded in the license's deactivation history as `developer`; not counted against the app's deactivation quota.",
      params: s.LicenseIdParams,
      response: s.ResetDevicesResult,
      errors: [404],
      handler: async ({ actor, params }) => ({
        license_id: params.license_id,
        devices_removed: await licenses.resetDevices(actor.developerId, params.license_id),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/licenses/{license_id}/deactivations',
      operationId: 'listLicenseDeactivations',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: "A license's deactivation history, newest first: devices the app deactivated itself and those your resets removed",
      params: s.LicenseIdParams,
      query: PageQuery,
      response: s.Deactivation.array(),
      paginated: true,
      errors: [404],
      handler: async ({ actor, params, query, ctx }) => {
        const { rows, total } = await licenses.listDeactivations(actor.developerId, params.license_id, query);
        setPageHeaders(ctx, query, total);
        return rows.map((d) => ({ ...d, deactivated_at: d.deactivated_at.toISOString() }));
      },
    }),
  ];
}
