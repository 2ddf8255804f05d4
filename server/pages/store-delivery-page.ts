import { platformName } from '../delivery/deliverable-builds.js';
import { escapeHtml as e, type PageOptions } from './html-page.js';

/** What the permanent delivery page of a store license shows: never the key. */
export interface StoreDeliveryView {
  appName: string;
  offers: { platform: string; version: string | null; href: string }[];
  downloadsLeft: number;
  downloadLimit: number;
}

/** The current build of each platform, downloaded through this page's token; the allowance left. */
export function storeDeliveryPage(v: StoreDeliveryView): PageOptions {
  const exhausted = v.downloadsLeft <= 0;
  const list = v.offers.length
    ? `<ul id="downloads">
${v.offers
  .map(
    (o) =>
      `<li data-platform="${e(o.platform)}">${exhausted ? e(platformName(o.platform)) : `<a class="button" href="${e(o.href)}" rel="noreferrer">Download for ${e(platformName(o.platform))}</a>`}${o.version ? ` <span class="muted">version ${e(o.version)}</span>` : ''}</li>`,
  )
  .join('\n')}
</ul>`
    : `<p id="no-build">No build of ${e(v.appName)} is ready for download yet. Come back to this page later; it stays valid.</p>`;
  const allowance = exhausted
    ? `<p id="limit-reached">All ${v.downloadLimit} downloads of this license are used. Contact the seller for more.</p>`
    : `<p class="muted" id="allowance">${v.downloadsLeft} of ${v.downloadLimit} downloads left.</p>`;
  return {
    title: `Download ${e(v.appName)}`,
    body: `<h1>Download ${e(v.appName)}</h1>
<p>Pick the version for your computer. Your license key is in the app's store listing or in your delivery email; it is not shown here.</p>
${list}
${allowance}
<p class="muted">This page stays valid while your license is active. Bookmark it to download the latest version again.</p>`,
  };
}

/** The license behind the page is revoked or expired, or its downloads are used up. */
export function storeDeliveryRefusal(id: 'inactive' | 'limit-reached' | 'not-offered', detail: string): PageOptions {
  return { title: 'Download unavailable', body: `<h1>Download unavailable</h1>\n<p id="${id}">${e(detail)}</p>` };
}
