import type { PageOptions, PageProduct } from './html-page.js';
import { refusalBlock } from './refusal.js';

/**
 * The offline activation form: the customer picks the request file their app saved and gets the
 * license file back as a download. A plain multipart POST back to this page, so it works without
 * JavaScript. `error` says why the previous attempt failed (its message, and its error code for the
 * advice) and, once the file's key was accepted, `product` the app it is for. The page serves every
 * app: which one is known only from the file.
 */
export function offlineActivationFormPage(form: { error?: { message: string; code?: string }; product?: PageProduct } = {}): PageOptions {
  return {
    title: 'Activate a computer without internet',
    product: form.product,
    withForm: true,
    body: `<h1>Activate a computer without internet</h1>
<ol id="steps">
<li>On the computer without internet, let the app save an activation request file, and copy it to a computer with internet (a USB stick will do).</li>
<li>Upload that file here. You get a license file back, <code>license.lic</code>.</li>
<li>Take the license file to the first computer and open it in the app: it is activated.</li>
</ol>
${form.error ? refusalBlock('offline-activation-error', form.error) : ''}<form method="post" enctype="multipart/form-data">
<p><label for="request">Activation request file</label><br>
<input id="request" name="request" type="file" required accept=".json,application/json" aria-describedby="request-hint"></p>
<p class="muted" id="request-hint">The request file holds your license key: keep it, and the license file, as private as the key.</p>
<p><button class="button" id="activate-offline" type="submit">Get the license file</button></p>
</form>`,
  };
}
