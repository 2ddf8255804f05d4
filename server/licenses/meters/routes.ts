import { defineRoute } from '../../http/route.js';
import { LicenseIdParams } from '../schemas.js';
import * as s from './schemas.js';
import type { MetersService } from './service.js';

const METERS = 'Metered features (docs/protocol.md, Metered features): per feature, `uses_per_period` units per `period`';

export function meterRoutes(meters: MetersService) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/licenses/{license_id}/usage',
      operationId: 'getLicenseUsage',
      scope: 'read',
      tag: 'Licenses',
      auth: 'developer',
      rateLimit: 'general',
      summary: "A license's meters with their usage in the current period (portal: the license page's Metered features; CLI: licenses usage)",
      description: `${METERS}. 404 for a license that is not yours.`,
      params: LicenseIdParams,
      response: s.LicenseUsage,
      errors: [404],
      handler: ({ actor, params }) => meters.usage(actor.developerId, params.license_id),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/licenses/{license_id}/meters',
      operationId: 'setLicenseMeters',
      scope: 'licenses',
      tag: 'Licenses',
      auth: 'developer',
      rateLimit: 'general',
      summary: "Replace a license's meters (portal: the license page's Metered features; CLI: licenses set-meters); answers them with their usage",
      description:
        `${METERS}. Body \`meters\`: the whole set, \`{}\` for none. Units already consumed stay counted in their feature's period: ` +
        'a lowered limit can leave `used` above it (then `remaining` is 0 until the period ends), a feature removed and added again ' +
        'finds its usage, and a changed period counts in the new period from 0. Takes effect at the next consumption. 404 for a license that is not yours.',
      params: LicenseIdParams,
      body: s.SetMetersBody,
      response: s.LicenseUsage,
      errors: [404],
      handler: ({ actor, params, body }) => meters.setMeters(actor.developerId, params.license_id, body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/consume',
      operationId: 'consumeMeteredFeature',
      tag: 'Runtime',
      auth: 'none',
      rateLimit: 'runtime',
      summary: 'Count units of a metered feature on the license the runtime token names; answers the balance left',
      description:
        'Counted once per `idempotency_key`: a replay (a retry after a lost answer, an offline queue reported twice) answers the first ' +
        'answer with `replayed: true` and counts nothing; the key already counted for another feature or quantity: 409 IDEMPOTENCY_KEY_REUSED. ' +
        "Counted in the meter's period current when the request arrives: a late report (an offline queue) counts in the period it arrives in, " +
        '`consumed_at` (default now, any past date, at most 5 minutes ahead) is recorded and never chooses the period. Past `uses_per_period`: ' +
        '409 USAGE_LIMIT_EXCEEDED with `remaining` and `period_ends_at`, nothing counted; concurrent consumptions never pass the limit together. ' +
        'A feature without a meter: 404 METER_NOT_FOUND. 401 INVALID_RUNTIME_TOKEN for a token this authority did not sign (an expired one is ' +
        'accepted if genuine: a refresh would renew it on the same conditions), 401 INVALID_LICENSE_KEY once the license is revoked, 403 LICENSE_EXPIRED ' +
        "once it expired, 403 DEVICE_NOT_ACTIVATED once the token's device is no longer on record for the license (reset or deactivated; a " +
        'fingerprint another installation of the machine renamed still stands for its record). 400 for a `consumed_at` in the future.',
      body: s.ConsumeBody,
      response: s.ConsumeResult,
      errors: [401, 403, 404, 409],
      handler: ({ body }) => meters.consume(body),
    }),
  ];
}
