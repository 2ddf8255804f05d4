import type { LicenseType, RuntimePolicy } from './protocol.js';
import type { MemoryProtection } from './token-store/secret-memory.js';

/** What the app acts on: run (`valid`, `grace`) or ask for the network or a key (everything else). */
export const LICENSE_STATES = ['valid', 'grace', 'expired', 'revoked', 'tampered', 'unlicensed'] as const;
export type LicenseState = (typeof LICENSE_STATES)[number];

/** Why a state other than `valid` was reached; a closed list, like the states. */
export const STATUS_REASONS = [
  'not_activated',
  'foreign_cache',
  'device_changed',
  'offline',
  'grace_exhausted',
  'license_expired',
  'trial_used',
  'revoked_by_vendor',
  'device_deactivated',
  /** This installation deactivated itself (`license.deactivate()`): its seat is free, its cache gone. */
  'deactivated',
  /** A floating license whose seats are all leased to other running computers (the authority said so at the last refresh). */
  'no_seat_available',
  'clock_rollback',
  'cache_modified',
  'token_invalid',
] as const;
export type StatusReason = (typeof STATUS_REASONS)[number];

export interface LicenseStatus {
  state: LicenseState;
  /** null when `valid`. */
  reason: StatusReason | null;
  /** True for `valid` and `grace`: the app may run its licensed features. */
  usable: boolean;
  licenseId: string | null;
  licenseType: LicenseType | null;
  /** The license's features object from the signed token; `{}` when unlicensed. */
  features: Record<string, unknown>;
  policy: RuntimePolicy | null;
  /** When offline use ends unless the app reaches the license server before then. */
  graceEndsAt: Date | null;
  lastOnlineAt: Date | null;
  licenseExpiresAt: Date | null;
  /**
   * What holds the token and keys now. `sodium`: guarded, locked memory, in use from just after the
   * first answer; `masked`: the plain-buffer fallback (until then, or where sodium-native cannot load).
   */
  memoryProtection: MemoryProtection;
}

export function isUsable(state: LicenseState): boolean {
  return state === 'valid' || state === 'grace';
}
