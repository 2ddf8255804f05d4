import { z } from 'zod';
import { RequestError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import type { Entitlements } from '../payments/entitlement.js';
import { AppId, CheckoutSessionId } from '../payments/entitlement-schemas.js';
import { deliveredPage, emailSentPage, errorPage, pendingPage } from './delivery-page.js';
import { sendPage } from './html-page.js';

const DeliveryPageQuery = z
  .object({
    app_id: AppId,
    session_id: CheckoutSessionId.optional().describe('Processor checkout (route C.1): the checkout session id; shows the license'),
    email: z.email().max(254).optional().describe('Generic storefront redirect: the buyer\'s address; the license is emailed, never shown'),
  })
  .refine((q) => (q.session_id === undefined) !== (q.email === undefined), { message: 'give either session_id or email' });

/** The hosted pages a buyer lands on after paying. */
export function deliveryPageRoutes(entitlements: Entitlements) {
  return [
    defineRoute({
      method: 'get', path: '/download', operationId: 'deliveryPage', tag: 'Public', auth: 'none', rateLimit: 'general',
      summary: 'Hosted delivery page (HTML) after a purchase',
      description:
        'With `session_id` and `app_id`: the license key with a copy button, a download button (signed link, 7 days) and getting-started text; ' +
        'while the payment notification is not processed, a page that refreshes itself every 2 seconds. A refresh shows the same key and build. ' +
        'With `app_id` and `email` (an address is no secret): no key is shown; the delivery email goes to that address once if it bought a license, ' +
        'and the page says to check the inbox either way. An unknown app or a revoked license answers a 404 HTML page; an invalid query the standard ' +
        'JSON error body (400). Sent with a strict Content-Security-Policy, `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.',
      query: DeliveryPageQuery, errors: [404],
      fileResponse: { description: 'The HTML page', contentType: 'text/html' },
      handler: async ({ query, ctx }) => {
        try {
          if (query.email !== undefined) {
            await entitlements.emailForAddress(query.app_id, query.email);
            return sendPage(ctx, 200, emailSentPage(query.email));
          }
          sendPage(ctx, 200, deliveredPage(await entitlements.forSession(query.app_id, query.session_id!)));
        } catch (err) {
          if (!(err instanceof RequestError) || err.status !== 404) throw err;
          // Pending is the expected first answer after paying, not a failure.
          if (err.code === 'LICENSE_NOT_PROVISIONED') sendPage(ctx, 200, pendingPage());
          else sendPage(ctx, 404, errorPage(err.message));
        }
      },
    }),
  ];
}
