import { escapeHtml as e, type PageOptions } from './html-page.js';

/**
 * The offline activation form: the customer picks the request file their app saved and gets the
 * license file back as a download. A plain multipart POST back to this page, so it works without
 * JavaScript. `error` (plain text) says why the previous attempt failed.
 */
export function offlineActivationFormPage(form: { error?: string } = {}): PageOptions {
  const error = form.error ? `<p id="offline-activation-error" role="alert"><strong>${e(form.error)}</strong></p>\n` : '';
  return {
    title: 'Activate a computer without internet',
    withForm: true,
    body: `<h1>Activate a computer without internet</h1>
<p>On the computer to activate, let the app save an activation request file, and bring it here on any computer with internet.
You get a license file back: take it to that computer and open it in the app.</p>
${error}<form method="post" enctype="multipart/form-data">
<p><label for="request">Activation request file</label><br>
<input id="request" name="request" type="file" required accept=".json,application/json"></p>
<p class="muted">The request file holds your license key: keep it, and the license file, as private as the key.</p>
<p><button class="button" id="activate-offline" type="submit">Get the license file</button></p>
</form>`,
  };
}
