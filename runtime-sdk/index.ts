/**
 * @latchkey/runtime-sdk: license activation, offline grace and background refresh for desktop apps.
 *
 *   const license = await createLicenseClient({ appId, serverUrl, publicKeys, fingerprintSalt, appVersion });
 *   const status = await license.check();
 *   if (!status.usable) await license.activate(keyTypedByUser);
 */
export { createLicenseClient, LicenseClient, type DeactivationResult } from './license-client.js';
export type { ConsumeOptions, ConsumeResult } from './meters/metering.js';
export type { LicenseClientOptions, LicenseLogger, PublicJwkInput } from './options.js';
export { LICENSE_STATES, STATUS_REASONS, type LicenseState, type LicenseStatus, type StatusReason } from './status.js';
export { statusMessage } from './status-message.js';
export { LICENSE_ERROR_CODES, LicenseError, type LicenseErrorCode } from './errors.js';
export type { LicenseEventName, LicenseEvents } from './events.js';
export { systemClock, type Clock } from './clock.js';
export { hostPlatform, type Platform } from './platform.js';
export type { Probe, Components } from './fingerprint/index.js';
export type { MemoryProtection } from './token-store/secret-memory.js';
export type { Ed25519PublicJwk, JwkSet, LicenseType, RuntimePolicy } from './protocol.js';
