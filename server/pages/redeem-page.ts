import { REDEMPTION_CODE_SHAPE } from '../redemption/codes.js';
import { escapeHtml as e, type PageOptions } from './html-page.js';
import { refusalBlock } from './refusal.js';

/**
 * The redemption form: a plain POST back to this page, so it works without JavaScript. `error`
 * says why the previous attempt failed (its message, and its error code for the advice); the
 * values typed are kept. The app is not known before the code is: the result page names it.
 */
export function redeemFormPage(form: { code: string; email: string; error?: { message: string; code?: string } }): PageOptions {
  return {
    title: 'Redeem your code',
    withForm: true,
    body: `<h1>Redeem your code</h1>
<p>Enter the code you received with your purchase. You get your license key and the download for your computer on the next page.</p>
${form.error ? refusalBlock('redeem-error', form.error) : ''}<form method="post">
<p><label for="code">Code</label><br>
<input id="code" name="code" value="${e(form.code)}" required maxlength="64" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="${e(REDEMPTION_CODE_SHAPE)}" aria-describedby="code-hint"></p>
<p class="muted" id="code-hint">Codes look like ${e(REDEMPTION_CODE_SHAPE)}; dashes and capitals are optional.</p>
<p><label for="email">Email (optional)</label><br>
<input id="email" name="email" type="email" value="${e(form.email)}" maxlength="254" autocomplete="email" aria-describedby="email-hint"></p>
<p class="muted" id="email-hint">With an email address, your license key and download link are also sent there, to keep.</p>
<p><button class="button" id="redeem" type="submit">Redeem</button></p>
</form>`,
  };
}
