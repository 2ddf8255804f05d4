import { DOCUMENT_TYPES, FINGERPRINT_PATTERN, ProtocolError, type RuntimePolicy, type RuntimeTokenClaims, type WrappedContentKey } from '@latchkey/runtime-sdk/protocol';
import { z } from 'zod';
import { RequestError } from '../errors.js';
import type { LicenseRead } from '../licenses/store.js';
import type { Keyring } from '../signing/keyring.js';
import type { ActivationResult } from './schemas.js';

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * Signs the runtime token for one device of a license. It lives `offline_grace_hours`: the app
 * runs offline that long, then needs the authority again. A floating license's token lives as long
 * as the device's lease, so its offline grace is the lease TTL and its policy says so.
 */
export function issueRuntimeToken(
  keyring: Keyring,
  license: Pick<LicenseRead, 'id' | 'app_id' | 'license_type' | 'features' | 'device_limit' | 'expires_at' | 'seat_model' | 'lease_ttl_minutes'>,
  offlineGraceHours: number,
  device: string,
  now: Date,
  /** The running protected build's content key, wrapped for this device. */
  contentKey: WrappedContentKey | null,
  /** Floating licenses: the end of the device's lease. */
  leaseEnd: Date | null,
): ActivationResult {
  const policy: RuntimePolicy = { device_limit: license.device_limit, offline_grace_hours: offlineGraceHours };
  if (license.seat_model === 'floating') Object.assign(policy, { seat_model: 'floating', lease_ttl_minutes: license.lease_ttl_minutes! });
  const iat = seconds(now);
  const exp = leaseEnd ? seconds(leaseEnd) : iat + offlineGraceHours * 3600;
  const claims: RuntimeTokenClaims = {
    iss: 'latchkey',
    sub: license.id,
    app_id: license.app_id,
    device,
    license_type: license.license_type,
    features: license.features,
    policy,
    license_expires_at: license.expires_at ? seconds(license.expires_at) : null,
    iat,
    exp,
    ...(contentKey ? { content_key: contentKey } : {}),
  };
  return { token: keyring.sign(DOCUMENT_TYPES.runtimeToken, claims), expires_at: new Date(exp * 1000).toISOString(), policy };
}

/** What refresh needs from a presented token; the signature already vouches for the rest. */
const PresentedClaims = z.object({
  iss: z.literal('latchkey'),
  sub: z.string().min(1).max(64),
  device: z.string().regex(FINGERPRINT_PATTERN),
});

/**
 * The license and device a token this authority signed was issued for. Its expiry is deliberately
 * not checked: an app past its offline grace comes back online with the token it has.
 */
export function readRuntimeToken(keyring: Keyring, token: string): { licenseId: string; device: string } {
  try {
    const claims = PresentedClaims.parse(keyring.verify(token, DOCUMENT_TYPES.runtimeToken));
    return { licenseId: claims.sub, device: claims.device };
  } catch (err) {
    if (err instanceof ProtocolError || err instanceof z.ZodError) {
      throw new RequestError('INVALID_RUNTIME_TOKEN', 'The runtime token is not one this authority signed; activate with the license key');
    }
    throw err;
  }
}
