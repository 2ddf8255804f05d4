import type Koa from 'koa';
import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { errorPage } from '../pages/delivery-page.js';
import { sendPage } from '../pages/html-page.js';
import { storeDeliveryPage, storeDeliveryRefusal } from '../pages/store-delivery-page.js';
import { downloadMeter } from './download-meter.js';
import type { MeteredDownloads, MeteredScope } from './metered-download.js';
import { downloadLimit, unionIds, type StoreOffer } from './offer.js';
import { allowanceLeft } from './download-allowance.js';
import type { EntitlementsStore } from './store.js';
import type { DeliveryTokens } from './tokens.js';

const NOT_FOUND_DETAIL = 'This download page does not exist, or was removed.';
const INACTIVE_DETAIL = 'The license behind this page is not active. If you still have a subscription, contact the seller.';

/**
 * docs/contract.md's permanent delivery URL, `{delivery_url_base}/d/<token>`: the current build of each
 * platform, downloaded through the same token and counted against the store's allowance (10 per
 * build offered, pooled, shared with the installer: metered-download.ts; a developer-set download
 * limit replaces it). Answers HTML: 404 for an
 * unknown token, 403 for an inactive license or an allowance used up (`#limit-reached`).
 */
export function createStoreDeliveryPages(deps: { store: EntitlementsStore; offer: StoreOffer; tokens: DeliveryTokens; metered: MeteredDownloads; clock: Clock }) {
  const { store, offer, metered, clock } = deps;

  /** The page's store license, app and license; the HTML refusal is sent when there is none or it is not active. */
  async function scopeOf(ctx: Koa.Context, q: Knex, token: string, lock: boolean): Promise<MeteredScope | null> {
    const found = await store.byDeliveryToken(deps.tokens.hashOf(token));
    const row = found && lock ? await store.lockStoreLicense(q as Knex.Transaction, found.id) : found;
    const license = row?.license_id && row.delivery_token_hash ? await store.readLicense(q, row.license_id, clock.now()) : undefined;
    if (!row || !license) {
      sendPage(ctx, 404, errorPage(NOT_FOUND_DETAIL));
      return null;
    }
    if (license.effective_status !== 'ACTIVE') {
      sendPage(ctx, 403, storeDeliveryRefusal('inactive', INACTIVE_DETAIL));
      return null;
    }
    return { row, license, app: (await store.eventApp(q, row.app_id))! };
  }

  return {
    async page(ctx: Koa.Context, token: string): Promise<void> {
      const scope = await scopeOf(ctx, store.db, token, false);
      if (!scope) return;
      const offers = await offer.current(store.db, scope.app);
      const offered = unionIds(
        scope.row.offered_build_ids,
        offers.map((o) => o.build.id),
      );
      const limit = downloadLimit(scope.license, scope.app, offered);
      sendPage(
        ctx,
        200,
        storeDeliveryPage(
          {
            product: { appName: scope.app.name, seller: await store.sellerName(store.db, scope.app.developer_id) },
            offers: offers.map((o) => ({
              platform: o.platform,
              build_platform: o.build.platform,
              version: o.build.version,
              href: `/d/${encodeURIComponent(token)}/builds/${encodeURIComponent(o.build.id)}`,
            })),
            // A part of a download used (a range) leaves the whole ones that still fit.
            downloadsLeft: Math.floor(allowanceLeft(await downloadMeter.used(store.db, scope.row.id), limit)),
            downloadLimit: limit,
          },
          ctx.get('user-agent'),
        ),
      );
    },

    /**
     * One download of a build the page offers (current now, or offered earlier), counted in the
     * bytes the answer carries: the whole file is one download, a range its share of one, HEAD and
     * 304 nothing. Refused (`#limit-reached`) when the answer would go past the allowance.
     */
    async download(ctx: Koa.Context, token: string, buildId: string): Promise<void> {
      await metered.download(ctx, {
        open: (trx) => scopeOf(ctx, trx, token, true),
        async file(trx, scope, offered) {
          const file = offered.has(buildId) ? await store.readyBuild(trx, scope.app.id, buildId) : undefined;
          if (!file) sendPage(ctx, 404, storeDeliveryRefusal('not-offered', 'This build is not offered on this page any more; open the page again for the current one.'));
          return file ?? null;
        },
        limitReached: (limit) => sendPage(ctx, 403, storeDeliveryRefusal('limit-reached', `All ${limit} downloads of this license are used. Contact the seller for more.`)),
      });
    },
  };
}

export type StoreDeliveryPages = ReturnType<typeof createStoreDeliveryPages>;
