import { createHmac } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { safeEqual } from '../crypto/secrets.js';

/** docs/contract.md: a build's download URL is valid for 7 days. */
export const DOWNLOAD_LINK_DAYS = 7;
const DAY_MS = 86_400_000;

/** When a link made at `now` expires: 7 days on, or the end of the current 7-day window from `since`. */
export function linkExpiry(now: Date, since?: Date): Date {
  const period = DOWNLOAD_LINK_DAYS * DAY_MS;
  if (!since) return new Date(now.getTime() + period);
  const windows = Math.floor(Math.max(0, now.getTime() - since.getTime()) / period) + 1;
  // Whole seconds: the URL carries the expiry in seconds and must not change within a window.
  return new Date(Math.ceil((since.getTime() + windows * period) / 1000) * 1000);
}

export type LinkCheck = 'valid' | 'invalid' | 'expired';

/**
 * Signed download URLs: `/v1/downloads/<build_id>?expires=<unix seconds>&signature=<HMAC>`, the
 * HMAC-SHA256 of build id and expiry under a key derived from the master key. Anyone holding the
 * URL may download until it expires; changing any part of it breaks the signature.
 */
export function createDownloadLinks(masterKey: MasterKey, clock: Clock, baseUrl: string) {
  const key = masterKey.derive('build-download-link');
  // A license-bound link signs the license too: neither kind of link passes for the other.
  const sign = (buildId: string, expires: number, licenseId?: string) =>
    createHmac('sha256', key)
      .update(licenseId === undefined ? `${buildId}\n${expires}` : `${buildId}\n${expires}\n${licenseId}`)
      .digest('base64url');

  return {
    /**
     * A link valid 7 days from now; with `since` (when the buyer's delivery began), the one link of
     * the current 7-day window counted from it, so a page shown again shows the same URL
     * (docs/contract.md: a refresh shows the same key and link) and a new one only once it expired.
     */
    create(buildId: string, since?: Date): { download_url: string; expires_at: string } {
      const expires = Math.floor(linkExpiry(clock.now(), since).getTime() / 1000);
      const query = new URLSearchParams({ expires: String(expires), signature: sign(buildId, expires) });
      return {
        download_url: `${baseUrl}/v1/downloads/${encodeURIComponent(buildId)}?${query}`,
        expires_at: new Date(expires * 1000).toISOString(),
      };
    },

    /**
     * The installer's link of a build for one license (an update manifest's), valid 7 days:
     * `/v1/installer-downloads/<build_id>?license=<license_id>&expires=...&signature=...`. The
     * download is counted against what the license may download (a store license's allowance).
     */
    createForLicense(buildId: string, licenseId: string): string {
      const expires = Math.floor(linkExpiry(clock.now()).getTime() / 1000);
      const query = new URLSearchParams({ license: licenseId, expires: String(expires), signature: sign(buildId, expires, licenseId) });
      return `${baseUrl}/v1/installer-downloads/${encodeURIComponent(buildId)}?${query}`;
    },

    /** The signature is checked before the expiry, so a forged expiry reads as forged. `licenseId` for a link of `createForLicense`. */
    check(buildId: string, expires: string | undefined, signature: string | undefined, licenseId?: string): LinkCheck {
      if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return 'invalid';
      if (!safeEqual(signature, sign(buildId, Number(expires), licenseId))) return 'invalid';
      return Number(expires) * 1000 <= clock.now().getTime() ? 'expired' : 'valid';
    },
  };
}

export type DownloadLinks = ReturnType<typeof createDownloadLinks>;
