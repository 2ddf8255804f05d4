import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import type { Marketplace } from './service.js';

export function marketplaceRoutes(marketplace: Marketplace) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/marketplace/licenses',
      operationId: 'provisionMarketplaceLicense',
      scope: 'licenses',
      tag: 'Marketplace',
      auth: 'developer',
      rateLimit: 'marketplace',
      summary: 'Provision a license for a marketplace or own-storefront order',
      description:
        'Authenticate with `X-API-Key: <API_KEY>` (an `Authorization: Bearer` credential works too). Mints a license of `app_id` whose `source` is `channel`, ' +
        'charges the 4 USD platform fee once (trial licenses are exempt) and, with `customer_email` and a READY build, queues the delivery email, all in one transaction. ' +
        'Idempotent per order: the same `marketplace_order_id` for the same app answers the license provisioned first (201 again, with header ' +
        '`Idempotent-Replayed: true`; the other fields of the replay are ignored), with no second license, fee or email, also under concurrent calls. ' +
        '`downloads` has a fresh signed link (7 days) to the build of each platform the app ships (its own newest READY build, else the newest `cross_platform` one; ' +
        'empty while there is none, or for a revoked license); `download_url` is the newest of them, kept for existing clients. ' +
        'Paid license types need an active Pro subscription (403 PLAN_REQUIRED on the free plan, which may provision trial licenses). ' +
        'Refunds: revoke the license with POST /v1/licenses/{license_id}/revoke. Limited to 60 requests a minute per developer (429 with `Retry-After`).',
      body: s.ProvisionBody,
      response: s.ProvisionedLicense,
      status: 201,
      errors: [403, 404],
      handler: async ({ actor, body, ctx }) => {
        const { replayed, ...license } = await marketplace.provision(actor.developerId, body);
        if (replayed) ctx.set('Idempotent-Replayed', 'true');
        return license;
      },
    }),
  ];
}
