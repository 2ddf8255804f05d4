import type Koa from 'koa';
import { z } from 'zod';
import { RESET_PAGE_PATH } from '../accounts/passwords.js';
import { requestPasswordReset } from '../accounts/routes.js';
import { NewPassword } from '../accounts/schemas.js';
import type { AccountsService } from '../accounts/service.js';
import { RequestError } from '../errors.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { defineRoute } from '../http/route.js';
import { sendPage, type PageOptions } from './html-page.js';
import { linkSentPage, newPasswordPage, passwordSetPage, requestLinkPage } from './password-reset-page.js';

// Lenient on purpose: whatever is typed gets an HTML answer with the form again, not a JSON error.
const RequestForm = z.object({ email: z.string().max(254).default('') });
const NewPasswordForm = z.object({
  token: z.string().max(200).default(''),
  new_password: z.string().max(1000).default(''),
  repeat_password: z.string().max(1000).default(''),
});
const Email = z.string().trim().toLowerCase().pipe(z.email().max(254));
const LINK_REFUSED = 'This link is invalid, expired or already used: ask for a new one below.';

/** The hosted password reset pages (the emailed link opens the first), at this server's public base URL. */
export function passwordResetPageRoutes(accounts: AccountsService, rateLimiter: RateLimiter) {
  const common = { tag: 'Public', auth: 'none', rateLimit: 'auth', fileResponse: { description: 'The HTML page', contentType: 'text/html' } } as const;
  const description =
    'Server-rendered, escaped, under a strict Content-Security-Policy (no script; its form posts to this origin), with ' +
    '`Referrer-Policy: no-referrer` and `Cache-Control: no-store`; it works without JavaScript.';

  /** A refusal of the API (a rate limit, a used token) shown on the page `page` makes of it, with its status and headers. */
  async function showingRefusals(ctx: Koa.Context, work: () => Promise<void>, page: (refusal: RequestError) => PageOptions) {
    try {
      await work();
    } catch (err) {
      if (!(err instanceof RequestError) || err.status >= 500) throw err;
      for (const [name, value] of Object.entries(err.extra.headers ?? {})) ctx.set(name, value);
      sendPage(ctx, err.status, page(err));
    }
  }

  return [
    defineRoute({
      ...common,
      method: 'get',
      path: RESET_PAGE_PATH,
      operationId: 'passwordResetPage',
      summary: 'Hosted password reset page (HTML): with the emailed `token`, a form for the new password; without, a form to email a link',
      description: `A token that no longer works shows the email form with the reason (401). ${description}`,
      query: z.object({ token: z.string().max(200).optional().describe("The emailed link's token") }),
      errors: [401],
      handler: async ({ query, ctx }) => {
        if (query.token === undefined) return sendPage(ctx, 200, requestLinkPage({ email: '' }));
        if (await accounts.passwordResetUsable(query.token)) return sendPage(ctx, 200, newPasswordPage({ token: query.token }));
        sendPage(ctx, 401, requestLinkPage({ email: '', notice: LINK_REFUSED }));
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: `${RESET_PAGE_PATH}/request`,
      operationId: 'passwordResetPageRequest',
      summary: "The reset page's email form: sends a link like POST /v1/auth/password-reset (HTML)",
      description: `The same answer whether or not an account has the address, and the same limits as the API. ${description}`,
      formBody: true,
      body: RequestForm,
      handler: async ({ body, ctx }) => {
        const email = Email.safeParse(body.email);
        if (!email.success) return sendPage(ctx, 400, requestLinkPage({ email: body.email, error: 'Enter a valid email address.' }));
        await showingRefusals(
          ctx,
          async () => {
            await requestPasswordReset(accounts, rateLimiter, ctx, email.data);
            sendPage(ctx, 200, linkSentPage());
          },
          (refusal) => requestLinkPage({ email: body.email, error: refusal.message }),
        );
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: RESET_PAGE_PATH,
      operationId: 'passwordResetPageSubmit',
      summary: "The reset page's new-password form: sets it like POST /v1/auth/password-reset/confirm (HTML)",
      description: `The two passwords must match (400 with the form again); a token that no longer works shows the email form (401). ${description}`,
      formBody: true,
      body: NewPasswordForm,
      errors: [401],
      handler: async ({ body, ctx }) => {
        const password = NewPassword.safeParse(body.new_password);
        const mismatch = !password.success ? `The password ${password.error.issues[0]!.message}.` : body.new_password !== body.repeat_password ? 'The two passwords differ.' : null;
        if (mismatch) return sendPage(ctx, 400, newPasswordPage({ token: body.token, error: mismatch }));
        await showingRefusals(
          ctx,
          async () => {
            await accounts.resetPassword(body.token, body.new_password);
            sendPage(ctx, 200, passwordSetPage());
          },
          (refusal) =>
            refusal.code === 'INVALID_RESET_TOKEN' ? requestLinkPage({ email: '', notice: LINK_REFUSED }) : newPasswordPage({ token: body.token, error: refusal.message }),
        );
      },
    }),
  ];
}
