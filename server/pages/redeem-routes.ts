import { z } from 'zod';
import { RequestError } from '../errors.js';
import { rateSubject, type RateLimiter } from '../http/rate-limit.js';
import { defineRoute } from '../http/route.js';
import type { Redemption } from '../redemption/service.js';
import { deliveredPage } from './delivery-page.js';
import { sendPage } from './html-page.js';
import { redeemFormPage } from './redeem-page.js';

// Lenient on purpose: whatever is typed gets an HTML answer with the form again, not a JSON error.
const RedeemForm = z.object({
  code: z.string().max(200).default(''),
  email: z.string().max(254).default(''),
});
const Email = z.email();

/** The hosted redemption page ({app_url}/redeem, served at this server's public base URL). */
export function redeemPageRoutes(redemption: Redemption, rateLimiter: RateLimiter) {
  const description =
    'Server-rendered, escaped, under a strict Content-Security-Policy (its only script is the copy button; its form posts to this origin), ' +
    'with `Referrer-Policy: no-referrer` and `Cache-Control: no-store`; it works without JavaScript.';
  return [
    defineRoute({
      method: 'get',
      path: '/redeem',
      operationId: 'redeemPage',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: 'Hosted redemption page (HTML): the form, with `code` prefilled',
      description: `The form asks for the code and an optional email and posts to POST /redeem. ${description}`,
      query: z.object({ code: z.string().max(200).optional().describe('Prefills the code field') }),
      fileResponse: { description: 'The HTML page', contentType: 'text/html' },
      handler: async ({ query, ctx }) => sendPage(ctx, 200, redeemFormPage({ code: query.code ?? '', email: '' })),
    }),
    defineRoute({
      method: 'post',
      path: '/redeem',
      operationId: 'redeemPageSubmit',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: "The redemption page's form: redeems the code and shows the license (HTML)",
      description:
        'Same rules as POST /v1/public/redeem, and the same limit of 5 attempts a minute per address, counted together. Success shows the license key with a copy ' +
        "button, a download button (signed link, 7 days) and getting-started text under the app's name and seller; a failure shows the form again with the reason and what " +
        'to do about it, with the status of the ' +
        `JSON endpoint (404, 409, 410, 429 with \`Retry-After: 60\`). Reloading the result page posts again and says the code was already redeemed. ${description}`,
      formBody: true,
      body: RedeemForm,
      errors: [404, 409, 410],
      fileResponse: { description: 'The HTML page', contentType: 'text/html' },
      handler: async ({ body, ctx }) => {
        const code = body.code.trim();
        const email = body.email.trim();
        try {
          // Every attempt counts, whatever its outcome.
          await rateLimiter.admit(ctx, 'redemption', rateSubject.address(ctx.ip));
          if (email && !Email.safeParse(email).success) {
            return sendPage(ctx, 400, redeemFormPage({ code, email, error: { message: 'Enter a valid email address, or leave the field empty.' } }));
          }
          const license = await redemption.redeem(code, email || null);
          sendPage(ctx, 200, deliveredPage(license, ctx.get('user-agent'), `Your ${license.app_name} license`));
        } catch (err) {
          if (!(err instanceof RequestError) || err.status >= 500) throw err;
          for (const [name, value] of Object.entries(err.extra.headers ?? {})) ctx.set(name, value);
          sendPage(ctx, err.status, redeemFormPage({ code, email, error: err }));
        }
      },
    }),
  ];
}
