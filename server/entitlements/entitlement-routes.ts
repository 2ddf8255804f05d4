import { defineRoute } from '../http/route.js';
import type { Entitlements } from './entitlement.js';
import * as s from './entitlement-schemas.js';

/** Route C.3: the developer's own page asks for the buyer's license with the session id. */
export function checkoutEntitlementRoutes(entitlements: Entitlements) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/public/checkout-session/{session_id}/entitlement',
      operationId: 'getCheckoutEntitlement',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: 'The license bought in a checkout session of the connected account, with a fresh 7-day download link',
      description:
        'The session id is a secret: it is never logged or stored in clear. 404 `LICENSE_NOT_PROVISIONED` (with `Retry-After: 2`) until the payment ' +
        'notification is processed: retry after about 2 seconds. The first successful answer also sends the delivery email when the session collected ' +
        'an address (once per license). When no build is READY, `download_url`, `download_expires_at` and `app_version` are null and `note` says why.',
      params: s.EntitlementParams,
      query: s.EntitlementQuery,
      response: s.Entitlement,
      errors: [404],
      handler: ({ params, query }) => entitlements.forSession(query.app_id, params.session_id),
    }),
  ];
}
