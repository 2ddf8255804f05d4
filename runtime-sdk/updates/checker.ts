/**
 * The update check: ask the authority whether a push applies to this device, and accept its answer
 * only once verified: signed by a pinned key, for this app, platform, device and license, unexpired,
 * and not older than a manifest already seen. Nothing is shown, downloaded or written before that.
 */
import { LicenseError } from '../errors.js';
import { ProtocolError, verifyUpdateManifest, type UpdateManifestClaims } from '../protocol.js';
import type { UpdateChannel, UpdateIdentity } from './channel.js';
import { UpdateError } from './errors.js';

export interface CheckInput {
  channel: UpdateChannel;
  identity: UpdateIdentity;
  /** This device's label as the authority lists platforms (`linux-x64`, ...). */
  platform: string;
  engineVersion: string;
  highestSerialSeen: number;
}

/** The verified claims of the push for this device, or null when none applies. */
export async function checkForUpdate({ channel, identity, platform, engineVersion, highestSerialSeen }: CheckInput): Promise<UpdateManifestClaims | null> {
  const { settings } = channel;
  let manifest: string | null;
  try {
    manifest = await channel.check({ build_id: settings.buildId, version: settings.appVersion, platform, engine_version: engineVersion });
  } catch (err) {
    // Unreachable, 5xx or unreadable: try at the next launch. Any other answer is a refusal.
    const failed = !(err instanceof LicenseError) || err.retryable || err.code === 'INVALID_SERVER_RESPONSE';
    throw new UpdateError(failed ? 'CHECK_FAILED' : 'CHECK_REFUSED', `the update check failed: ${(err as Error).message}`, { cause: err });
  }
  if (manifest === null) return null;
  try {
    return verifyUpdateManifest(manifest, settings.publicKeys, {
      appId: settings.appId,
      platform,
      device: identity.device,
      licenseId: identity.licenseId,
      nowSeconds: Math.floor(settings.clock.now().getTime() / 1000),
      highestSerialSeen,
    });
  } catch (err) {
    if (!(err instanceof ProtocolError)) throw err;
    throw new UpdateError('MANIFEST_REJECTED', `the update manifest was refused (${err.failure}): ${err.message}`, { cause: err });
  }
}
