import { offersForVisitor, platformName } from '../delivery/deliverable-builds.js';
import type { PlatformDownload } from '../delivery/sold-license.js';
import { gettingStartedSteps, utcMinute } from '../email/delivery-message.js';
import type { Entitlement } from '../entitlements/entitlement.js';
import { escapeHtml as e, type PageOptions, type PageProduct } from './html-page.js';

/** docs/contract.md: before fulfilment the buyer is asked to retry after about 2 seconds. */
export const PENDING_REFRESH_SECONDS = 2;

const versionOf = (d: Pick<PlatformDownload, 'version'>) => (d.version ? ` ${e(d.version)}` : '');

/**
 * A platform's own build is named by its platform; a build for every OS as the main button by the
 * app alone, and under "Other platforms" by the platform it stands in for.
 */
const labelOf = (appName: string, d: PlatformDownload, listed = false) =>
  d.build_platform === d.platform || listed ? `${e(appName)}${versionOf(d)} for ${e(platformName(d.platform))}` : `${e(appName)}${versionOf(d)}`;

/**
 * The downloads: the visitor's own platform (read from their User-Agent) as the main button
 * (`#download`), every other platform the app ships under "Other platforms". Without a platform
 * the UA tells, the newest build (the single-link fields) is the main button.
 */
function downloadsSection(d: Entitlement, userAgent: string | undefined): string {
  const { mine: detected, others } = offersForVisitor(d.downloads, userAgent);
  const mine = detected ?? d.downloads.find((x) => x.build_id === d.build_id) ?? d.downloads[0]!;
  const rest = others.filter((x) => x !== mine);
  const other = rest.length
    ? `<h3>Other platforms</h3>
<ul id="other-platforms" class="downloads">
${rest.map((x) => `<li data-platform="${e(x.platform)}"><a class="button secondary" href="${e(x.download_url)}" rel="noreferrer">${labelOf(d.app_name, x, true)}</a></li>`).join('\n')}
</ul>`
    : '';
  return `<h2>Download</h2>
<p><a class="button" id="download" data-platform="${e(mine.platform)}" href="${e(mine.download_url)}" rel="noreferrer">Download ${labelOf(d.app_name, mine)}</a></p>
<p class="muted">This download link works until ${e(utcMinute(mine.download_expires_at))}; after that, open this page again for a new one. Your license key does not expire with it.</p>
${other}`;
}

/**
 * The bought license: key with a copy button, the download of the visitor's platform first with the
 * others below, getting started. `heading` is plain text.
 */
export function deliveredPage(d: Entitlement, userAgent: string | undefined, heading = `Thank you for buying ${d.app_name}`): PageOptions {
  const app = { appName: d.app_name, appVersion: d.app_version ?? undefined };
  const download = d.downloads.length ? downloadsSection(d, userAgent) : `<p id="no-build">${e(d.note ?? '')}</p>`;
  // The delivery email goes out only with a download link in it.
  const emailed = d.customer_email && d.download_url ? `<p class="muted">A copy was sent by email to ${e(d.customer_email)}.</p>` : '';
  return {
    title: `Your ${e(d.app_name)} license`,
    product: { appName: d.app_name, seller: d.seller_name },
    withCopyScript: true,
    body: `<h1>${e(heading)}</h1>
<h2>Your license key</h2>
<p><span class="key" id="license-key">${e(d.license_key)}</span></p>
<p><button class="button" id="copy-key" type="button" hidden>Copy key</button> <span id="copy-status" role="status"></span></p>
${download}
<h2>Getting started</h2>
<ol>
${gettingStartedSteps(app, 'Keep your key')
  .map((step) => `<li>${e(step)}</li>`)
  .join('\n')}
</ol>
${emailed}`,
  };
}

/** The payment notification is not processed yet: the page checks again shortly and shows the license once there. */
export function pendingPage(product: PageProduct | undefined): PageOptions {
  return {
    title: 'Preparing your license',
    product,
    refreshSeconds: PENDING_REFRESH_SECONDS,
    body: `<h1 id="pending">Your license is being prepared</h1>
<p>Your payment went through; your license key and download appear here in a moment. This page updates by itself when they are ready.</p>
<p><a href="" id="check-now">Check now</a></p>
<p class="muted">If nothing changes within a few minutes, contact the seller.</p>`,
  };
}

export function emailSentPage(email: string, d: Entitlement): PageOptions {
  return {
    title: 'Check your inbox',
    product: { appName: d.app_name, seller: d.seller_name },
    body: `<h1 id="check-inbox">Check your inbox</h1>
<p>The license key and download links for <strong>${e(email)}</strong> are sent to that address.
It can take a few minutes; look in your spam folder too.</p>
<p class="muted">If nothing arrives within an hour, contact the seller with the address you bought with.</p>`,
  };
}

/** What a buyer whose link leads nowhere can do: the link is the usual culprit, the seller the last resort. */
const NOT_FOUND_ADVICE =
  'Open the link again from your receipt or delivery email, in full: a link cut short or copied in part leads here. If it still does not work, contact the seller of the app, who can look up your purchase.';

export function errorPage(detail: string): PageOptions {
  return {
    title: 'Not found',
    body: `<h1>This page was not found</h1>
<p id="error-detail" class="alert">${e(detail)}</p>
<h2>What you can do</h2>
<p id="error-advice">${e(NOT_FOUND_ADVICE)}</p>`,
  };
}
