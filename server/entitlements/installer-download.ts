import type Koa from 'koa';
import type { DownloadLinks } from '../builds/download-link.js';
import type { Clock } from '../clock.js';
import { RequestError } from '../errors.js';
import type { MeteredDownloads } from './metered-download.js';
import type { EntitlementsStore } from './store.js';

/**
 * The installer's download of a pushed build (the URL of an update manifest, `links.createForLicense`):
 * for a store license counted against the allowance it shares with the hosted page; for any other
 * license, served like a plain signed link. JSON errors, as the runtime reads them.
 */
export function createInstallerDownloads(deps: {
  store: EntitlementsStore;
  metered: MeteredDownloads;
  links: Pick<DownloadLinks, 'check'>;
  clock: Clock;
  plain: (ctx: Koa.Context, buildId: string) => Promise<void>;
}) {
  const { store, metered, links, clock } = deps;

  return {
    async download(ctx: Koa.Context, q: { buildId: string; licenseId: string; expires?: string; signature?: string }): Promise<void> {
      const check = links.check(q.buildId, q.expires, q.signature, q.licenseId);
      if (check === 'invalid') throw new RequestError('DOWNLOAD_LINK_INVALID', 'This download link is not valid');
      if (check === 'expired') throw new RequestError('DOWNLOAD_LINK_EXPIRED', 'This download link has expired; ask for a new one');
      if (!(await store.isStoreLicense(q.licenseId))) return deps.plain(ctx, q.buildId);
      await metered.download(ctx, {
        async open(trx) {
          const row = await store.lockStoreLicenseOf(trx, q.licenseId);
          const license = row ? await store.readLicense(trx, q.licenseId, clock.now()) : undefined;
          if (!row || !license) throw new RequestError('LICENSE_NOT_FOUND', 'The license of this link no longer exists');
          if (license.effective_status !== 'ACTIVE') throw new RequestError('FORBIDDEN', 'The license of this link is not active');
          return { row, license, app: (await store.eventApp(trx, row.app_id))! };
        },
        // The pushed build, offered on the page or not: the signed link names it.
        async file(trx, scope) {
          const build = await store.readyBuild(trx, scope.app.id, q.buildId);
          if (!build) throw new RequestError('BUILD_NOT_FOUND', 'This build no longer exists');
          return build;
        },
        limitReached: (limit) => {
          throw new RequestError(
            'DOWNLOAD_LIMIT_REACHED',
            `All ${limit} downloads of this license are used (its delivery page and its updates together). Contact the seller for more.`,
          );
        },
      });
    },
  };
}

export type InstallerDownloads = ReturnType<typeof createInstallerDownloads>;
