import { DOCUMENT_TYPES, FINGERPRINT_PATTERN, ProtocolError, type RuntimePolicy, type RuntimeTokenClaims, type WrappedContentKey } from '@latchkey/runtime-sdk/protocol';
import { z } from 'zod';
import { RequestError } from '../errors.js';
import type { LicenseRead } from '../licenses/store.js';
import type { Keyring } from '../signing/keyring.js';
import type { ActivationResult } from './schemas.js';

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/** What refresh reads of a token, and the token itself. */
interface RememberedToken {
  token: string;
  licenseId: string;
  device: string;
}

/**
 * Runtime tokens come back: at every refresh (a floating seat's heartbeat) and with every
 * consumption, each presenting the token that this process signed or checked last. An Ed25519
 * signature check costs about 0.1 ms of CPU, a third of a refresh's (`npm run bench -- heartbeat`);
 * a token found here byte for byte (looked up by its signature, then compared whole) is one this
 * keyring signed or checked, so it is not checked again. The keyring's keys never change while it
 * lives. Bounded by the tokens' total length, least recently presented forgotten first: a token
 * is some 500 bytes, more with many features (up to 4 KB of them) or a content key, so 16 MB holds
 * some 30,000 typical ones. A forgotten or never-seen token (signed by another instance, or before a
 * restart) is checked as always. The comparison need not take constant time: finding the entry
 * takes the token's signature, which only a holder of the token has.
 */
const REMEMBERED_CHARACTERS = 16 * 1024 * 1024;

interface TokenMemory {
  /** By signature, least recently presented first. */
  entries: Map<string, RememberedToken>;
  /** The remembered tokens' total length. */
  characters: number;
}

const rememberedBy = new WeakMap<Keyring, TokenMemory>();

function memoryOf(keyring: Keyring): TokenMemory {
  let memory = rememberedBy.get(keyring);
  if (!memory) rememberedBy.set(keyring, (memory = { entries: new Map(), characters: 0 }));
  return memory;
}

const signatureOf = (token: string) => token.slice(token.lastIndexOf('.') + 1);

function remember(keyring: Keyring, token: string, read: { licenseId: string; device: string }): void {
  const memory = memoryOf(keyring);
  const signature = signatureOf(token);
  memory.characters += token.length - (memory.entries.get(signature)?.token.length ?? 0);
  memory.entries.set(signature, { token, ...read });
  for (const [oldest, forgotten] of memory.entries) {
    if (memory.characters <= REMEMBERED_CHARACTERS) break;
    memory.entries.delete(oldest);
    memory.characters -= forgotten.token.length;
  }
}

/** The remembered reading of exactly this token (moved to the most recent), else undefined. */
function recall(keyring: Keyring, token: string): { licenseId: string; device: string } | undefined {
  const { entries } = memoryOf(keyring);
  const signature = signatureOf(token);
  const found = entries.get(signature);
  if (found?.token !== token) return undefined;
  entries.delete(signature);
  entries.set(signature, found);
  return { licenseId: found.licenseId, device: found.device };
}

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
  const token = keyring.sign(DOCUMENT_TYPES.runtimeToken, claims);
  remember(keyring, token, { licenseId: license.id, device });
  return { token, expires_at: new Date(exp * 1000).toISOString(), policy };
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
  const recalled = recall(keyring, token);
  if (recalled) return recalled;
  try {
    const claims = PresentedClaims.parse(keyring.verify(token, DOCUMENT_TYPES.runtimeToken));
    const read = { licenseId: claims.sub, device: claims.device };
    remember(keyring, token, read);
    return read;
  } catch (err) {
    if (err instanceof ProtocolError || err instanceof z.ZodError) {
      throw new RequestError('INVALID_RUNTIME_TOKEN', 'The runtime token is not one this authority signed; activate with the license key');
    }
    throw err;
  }
}
