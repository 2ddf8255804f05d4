import { createHmac } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import { safeEqual } from '../crypto/secrets.js';

/** docs/contract.md: a build's download URL is valid for 7 days. */
export const DOWNLOAD_LINK_DAYS = 7;
const DAY_MS = 86_400_000;

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
    create(buildId: string): { download_url: string; expires_at: string } {
      const expires = Math.floor((clock.now().getTime() + DOWNLOAD_LINK_DAYS * DAY_MS) / 1000);
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
