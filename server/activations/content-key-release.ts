import { wrapContentKey } from '@latchkey/runtime-sdk/engine';
import type { WrappedContentKey } from '@latchkey/runtime-sdk/protocol';
import type { MasterKey } from '../crypto/master-key.js';
import type { Db } from '../db/knex.js';
import { contentKeyAad } from '../builds/content-keys.js';

export interface ReleaseRequest {
  licenseId: string;
  appId: string;
  /** The device fingerprint hash. */
  device: string;
  /** The running build; its content key is what is released. */
  buildId: string | null;
  /** The device key the request presented (base64url X25519), if any. */
  presentedKey: string | undefined;
  /**
   * Whether the presented key may replace the one on record: yes when the request proved the
   * license key and fingerprint (activation, refresh by key); a token alone cannot move the key
   * to another installation.
   */
  mayReplaceKey: boolean;
}

/**
 * Releases a protected build's content key to one activated device (docs/protocol.md, "Protected
 * builds"): wrapped to the device key on record, for this license and build only. Called after the
 * license and device passed every rule; null when the build is not an encrypted build of the
 * license's app or the device has no key.
 */
export function createContentKeyRelease(deps: { db: Db; masterKey: MasterKey }) {
  return async (request: ReleaseRequest): Promise<WrappedContentKey | null> => {
    if (!request.buildId) return null;
    // Writes only when the key on record changes: a refresh presenting the same key (every one, in
    // practice) reads. The outer SELECT sees the row as it was, so the new key comes first.
    const { rows } = await deps.db.raw<{ rows: { device_key: string | null; content_key_sealed: string | null }[] }>(
      `WITH changed AS (
         UPDATE devices SET device_key = ?::text
         WHERE license_id = ? AND fingerprint_hash = ? AND ?::text IS NOT NULL
           AND device_key IS DISTINCT FROM ?::text AND (device_key IS NULL OR ?::boolean)
         RETURNING device_key
       )
       SELECT coalesce((SELECT device_key FROM changed),
                       (SELECT device_key FROM devices WHERE license_id = ? AND fingerprint_hash = ?)) AS device_key,
              (SELECT content_key_sealed FROM builds WHERE id = ? AND app_id = ?) AS content_key_sealed`,
      [
        request.presentedKey ?? null,
        request.licenseId,
        request.device,
        request.presentedKey ?? null,
        request.presentedKey ?? null,
        request.mayReplaceKey,
        request.licenseId,
        request.device,
        request.buildId,
        request.appId,
      ],
    );
    const { device_key: deviceKey, content_key_sealed: sealed } = rows[0]!;
    if (!deviceKey || !sealed) return null;
    const contentKey = Buffer.from(deps.masterKey.open(sealed, contentKeyAad(request.buildId)), 'base64');
    try {
      return wrapContentKey(contentKey, deviceKey, { buildId: request.buildId, licenseId: request.licenseId, device: request.device });
    } finally {
      contentKey.fill(0);
    }
  };
}

export type ContentKeyRelease = ReturnType<typeof createContentKeyRelease>;
