import { offersForVisitor, platformName, type VisitorChoice } from '../delivery/deliverable-builds.js';
import { escapeHtml as e, type PageOptions, type PageProduct } from './html-page.js';

/** What the permanent delivery page of a store license shows: never the key. */
export interface StoreDeliveryView {
  product: PageProduct;
  offers: (VisitorChoice & { version: string | null; href: string })[];
  downloadsLeft: number;
  downloadLimit: number;
}

/**
 * The current build of each platform, downloaded through this page's token, the visitor's own
 * platform (read from their User-Agent) first and as the main button; the allowance left.
 */
export function storeDeliveryPage(v: StoreDeliveryView, userAgent: string | undefined): PageOptions {
  const exhausted = v.downloadsLeft <= 0;
  const { mine, others } = offersForVisitor(v.offers, userAgent);
  const ordered = mine ? [mine, ...others] : others;
  const appName = e(v.product.appName);
  const list = ordered.length
    ? `<ul class="downloads" id="downloads">
${ordered
  .map((o, i) => {
    const label = `${e(platformName(o.platform))}${o.version ? `, version ${e(o.version)}` : ''}`;
    const kind = o === mine || (!mine && i === 0) ? 'button' : 'button secondary';
    const offer = exhausted ? label : `<a class="${kind}" href="${e(o.href)}" rel="noreferrer">Download for ${label}</a>`;
    return `<li data-platform="${e(o.platform)}">${offer}</li>`;
  })
  .join('\n')}
</ul>`
    : `<p id="no-build">No build of ${appName} is ready for download yet. Come back to this page later; it stays valid.</p>`;
  const allowance = exhausted
    ? `<p id="limit-reached" class="alert">All ${v.downloadLimit} downloads of this license are used. Contact the seller for more.</p>`
    : `<p class="muted" id="allowance">${v.downloadsLeft} of ${v.downloadLimit} downloads left.</p>`;
  return {
    title: `Download ${appName}`,
    product: v.product,
    body: `<h1>Download ${appName}</h1>
<p>${mine ? 'The first download is for the computer you are using now.' : 'Pick the version for your computer.'}</p>
${list}
${allowance}
<h2>Next steps</h2>
<ol id="next-steps">
<li>Download ${appName} for the computer you will use it on, and install it.</li>
<li>Start ${appName}. When it asks for a license key, enter the key from your delivery email or from the store where you bought it; it is not shown on this page.</li>
<li>Bookmark this page: it stays valid while your license is active, to download the latest version again.</li>
</ol>`,
  };
}

/** The license behind the page is revoked or expired, or its downloads are used up. */
export function storeDeliveryRefusal(id: 'inactive' | 'limit-reached' | 'not-offered', detail: string): PageOptions {
  return { title: 'Download unavailable', body: `<h1>Download unavailable</h1>\n<p id="${id}" class="alert">${e(detail)}</p>` };
}
