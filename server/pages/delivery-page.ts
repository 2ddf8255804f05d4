import { gettingStartedSteps } from '../email/delivery-message.js';
import type { Entitlement } from '../payments/entitlement.js';
import { escapeHtml as e, type PageOptions } from './html-page.js';

/** docs/contract.md: before fulfilment the buyer is asked to retry after about 2 seconds. */
export const PENDING_REFRESH_SECONDS = 2;

/** The bought license: key with a copy button, download button, getting started. `heading` is plain text. */
export function deliveredPage(d: Entitlement, heading = `Thank you for buying ${d.app_name}`): PageOptions {
  const app = { appName: d.app_name, appVersion: d.app_version ?? undefined };
  const download = d.download_url
    ? `<p><a class="button" id="download" href="${e(d.download_url)}" rel="noreferrer">Download ${e(d.app_name)}${d.app_version ? ` ${e(d.app_version)}` : ''}</a></p>
<p class="muted">This download link works for 7 days (until ${e(d.download_expires_at ?? '')}); open this page again for a new one. Your license key does not expire with it.</p>`
    : `<p id="no-build">${e(d.note ?? '')}</p>`;
  // The delivery email goes out only with a download link in it.
  const emailed = d.customer_email && d.download_url ? `<p class="muted">A copy was sent by email to ${e(d.customer_email)}.</p>` : '';
  return {
    title: `Your ${e(d.app_name)} license`,
    withCopyScript: true,
    body: `<h1>${e(heading)}</h1>
<p>Your license key:</p>
<p><span class="key" id="license-key">${e(d.license_key)}</span></p>
<p><button class="button" id="copy-key" type="button">Copy key</button> <span id="copy-status" role="status"></span></p>
${download}
<h2>Getting started</h2>
<ol>
${gettingStartedSteps(app, 'Keep your key').map((step) => `<li>${e(step)}</li>`).join('\n')}
</ol>
${emailed}`,
  };
}

/** The payment notification is not processed yet: the page loads itself again shortly. */
export function pendingPage(): PageOptions {
  return {
    title: 'Preparing your license',
    refreshSeconds: PENDING_REFRESH_SECONDS,
    body: `<h1 id="pending">Your license is being prepared</h1>
<p>Your payment went through; your license key and download appear here in a moment. This page refreshes by itself.</p>
<p class="muted">If nothing changes within a few minutes, contact the seller.</p>`,
  };
}

/**
 * A storefront buyer named by an address. An address is no secret, so the page shows no key and
 * says the same whether or not that address bought anything.
 */
export function emailSentPage(email: string): PageOptions {
  return {
    title: 'Check your inbox',
    body: `<h1 id="check-inbox">Check your inbox</h1>
<p>If <strong>${e(email)}</strong> bought a license for this app, its license key and download link are sent to that address.
It can take a few minutes; look in your spam folder too.</p>`,
  };
}

export function errorPage(detail: string): PageOptions {
  return { title: 'Not found', body: `<h1>Not found</h1>\n<p id="error-detail">${e(detail)}</p>` };
}
