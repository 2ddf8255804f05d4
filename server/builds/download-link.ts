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
  const sign = (buildId: string, expires: number) => createHmac('sha256', key).update(`${buildId}\n${expires}`).digest('base64url');

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

    /** The signature is checked before the expiry, so a forged expiry reads as forged. */
    check(buildId: string, expires: string | undefined, signature: string | undefined): LinkCheck {
      if (!expires || !signature || !/^\d{1,12}$/.test(expires)) return 'invalid';
      if (!safeEqual(signature, sign(buildId, Number(expires)))) return 'invalid';
      return Number(expires) * 1000 <= clock.now().getTime() ? 'expired' : 'valid';
    },
  };
}

export type DownloadLinks = ReturnType<typeof createDownloadLinks>;
