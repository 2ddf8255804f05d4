import { AppIdParams } from '../apps/schemas.js';
import { defineRoute } from '../http/route.js';
import { LicenseIdParams } from '../licenses/schemas.js';
import { PURCHASE_SESSION_MINUTES, type SalesLinks } from './sales-links.js';
import * as s from './schemas.js';

const PRECONDITIONS = 'Needs a Pro subscription (403 PLAN_REQUIRED), a connected account (409 PAYMENT_ACCOUNT_NOT_CONNECTED) and a saved, active Price ID (409 PRICE_ID_NOT_SET).';

/** Routes A and B of docs/contract.md's sales routes (Route C needs no endpoint: see the README). */
export function salesLinkRoutes(links: SalesLinks) {
  const tag = 'Payments';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/apps/{app_id}/payment-link',
      operationId: 'createPaymentLink',
      scope: 'admin',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: "Route A: create or regenerate the app's reusable payment link",
      description:
        "Creates a payment link on your connected account for the app's Price, quantity 1, that redirects buyers to the hosted " +
        '/download page with their license. The 4 USD platform fee is taken as the application fee of one-time sales; for ' +
        'subscription Prices it is billed once per license through your Pro subscription. Regenerating deactivates the previous ' +
        `link: its URL stops selling. ${PRECONDITIONS}`,
      params: AppIdParams,
      response: s.PaymentLink,
      status: 201,
      errors: [403, 404, 409, 503],
      handler: ({ actor, params }) => links.generatePaymentLink(actor.developerId, params.app_id),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/apps/{app_id}/payment-link',
      operationId: 'getPaymentLink',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: "Route A: the app's current payment link",
      params: AppIdParams,
      response: s.PaymentLink,
      errors: [404],
      handler: ({ actor, params }) => links.currentPaymentLink(actor.developerId, params.app_id),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/apps/{app_id}/payment-link',
      operationId: 'deletePaymentLink',
      scope: 'admin',
      securesAccount: true,
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Route A: pause sales by deactivating the payment link; POST creates a new one',
      params: AppIdParams,
      errors: [404, 503],
      handler: ({ actor, params }) => links.removePaymentLink(actor.developerId, params.app_id),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/licenses/{license_id}/purchase-link',
      operationId: 'createPurchaseLink',
      scope: 'licenses',
      tag,
      auth: 'developer',
      rateLimit: 'general',
      summary: 'Route B: a short-lived, single-use checkout URL to pay for this license',
      description:
        `A checkout for the license's app Price, valid ${PURCHASE_SESSION_MINUTES} minutes and for one payment. Paying converts ` +
        'this license (trial, demo or expired) into a paid, active one instead of minting another. A revoked or already paid ' +
        `license answers 409 LICENSE_NOT_PURCHASABLE. ${PRECONDITIONS}`,
      params: LicenseIdParams,
      response: s.PurchaseLink,
      status: 201,
      errors: [403, 404, 409, 503],
      handler: ({ actor, params }) => links.createPurchaseLink(actor.developerId, params.license_id),
    }),
  ];
}
