import { z } from 'zod';
import { RequestError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import type { Entitlements } from '../entitlements/entitlement.js';
import { AppId, CheckoutSessionId } from '../entitlements/entitlement-schemas.js';
import { deliveredPage, emailSentPage, errorPage, pendingPage } from './delivery-page.js';
import { sendPage } from './html-page.js';

const DeliveryPageQuery = z
  .object({
    app_id: AppId,
    session_id: CheckoutSessionId.optional().describe('Processor checkout (route C.1): the checkout session id; shows the license'),
    email: z.email().max(254).optional().describe("Generic storefront redirect: the buyer's address; shows the newest live license bought with it"),
  })
  .refine((q) => (q.session_id === undefined) !== (q.email === undefined), { message: 'give either session_id or email' });

/** The hosted pages a buyer lands on after paying. */
export function deliveryPageRoutes(entitlements: Entitlements) {
  return [
    defineRoute({
      method: 'get',
      path: '/download',
      operationId: 'deliveryPage',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: 'Hosted delivery page (HTML) after a purchase',
      description:
        "With `session_id` and `app_id`: the app's name and its seller (the developer's company name), the license key with a copy button, " +
        'a download button (signed link, 7 days) and getting-started text; while the payment notification is not processed, a page that checks ' +
        'again every 2 seconds and shows the license once there (without JavaScript, a meta refresh every 2 seconds). A refresh shows the same key and links. ' +
        'With `app_id` and `email` (generic storefront redirect, docs/contract.md): the same page for the newest live license bought with that address ' +
        'within an hour of its sale (the buyer arrives from the checkout; an address is no secret, so later the page says to check the inbox and shows no key), ' +
        'and its delivery email (once per license and address); while the address has none (the order not provisioned yet), the self-refreshing page. ' +
        'One download per platform the app ships: the visitor\'s own platform (read from the User-Agent) first, the others under "Other platforms"; ' +
        'the links are those of the current 7-day window since the sale, so a refresh shows the same links. ' +
        'An unknown app or a revoked license answers a 404 HTML page; an invalid query the standard ' +
        'JSON error body (400). Sent with a strict Content-Security-Policy, `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.',
      query: DeliveryPageQuery,
      errors: [404],
      fileResponse: { description: 'The HTML page', contentType: 'text/html' },
      handler: async ({ query, ctx }) => {
        try {
          if (query.email !== undefined) {
            const found = await entitlements.forAddress(query.app_id, query.email);
            if (!found) return sendPage(ctx, 200, pendingPage(await entitlements.productOf(query.app_id)));
            return sendPage(ctx, 200, found.shown ? deliveredPage(found.entitlement, ctx.get('user-agent')) : emailSentPage(query.email, found.entitlement));
          }
          sendPage(ctx, 200, deliveredPage(await entitlements.forSession(query.app_id, query.session_id!), ctx.get('user-agent')));
        } catch (err) {
          if (!(err instanceof RequestError) || err.status !== 404) throw err;
          // Pending is the expected first answer after paying, not a failure.
          if (err.code === 'LICENSE_NOT_PROVISIONED') sendPage(ctx, 200, pendingPage(await entitlements.productOf(query.app_id)));
          else sendPage(ctx, 404, errorPage(err.message));
        }
      },
    }),
  ];
}
