import { REDEMPTION_CODE_SHAPE } from '../redemption/codes.js';
import { escapeHtml as e, type PageOptions } from './html-page.js';

/**
 * The redemption form: a plain POST back to this page, so it works without JavaScript. `error`
 * (plain text) says why the previous attempt failed; the values typed are kept.
 */
export function redeemFormPage(form: { code: string; email: string; error?: string }): PageOptions {
  const error = form.error ? `<p id="redeem-error" role="alert"><strong>${e(form.error)}</strong></p>\n` : '';
  return {
    title: 'Redeem your code',
    withForm: true,
    body: `<h1>Redeem your code</h1>
<p>Enter the code you received with your purchase to get your license key and download.</p>
${error}<form method="post">
<p><label for="code">Code</label><br>
<input id="code" name="code" value="${e(form.code)}" required maxlength="64" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="${e(REDEMPTION_CODE_SHAPE)}"></p>
<p><label for="email">Email (optional)</label><br>
<input id="email" name="email" type="email" value="${e(form.email)}" maxlength="254" autocomplete="email"></p>
<p class="muted">With an email address, your license key and download link are also sent there.</p>
<p><button class="button" id="redeem" type="submit">Redeem</button></p>
</form>`,
  };
}
