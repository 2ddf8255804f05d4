/**
 * The API's closed lists that the CLI offers as choices: a wrong value is refused at once, with
 * the list, rather than after an upload. The server validates them again; they change together.
 */

/** Operating system and architecture pairs an app can target. */
export const APP_PLATFORMS = ['win-x64', 'win-arm64', 'linux-x64', 'linux-arm64', 'mac-x64', 'mac-arm64'] as const;

/** A build's platform: one of its app's, or `cross_platform` (offered to every device). */
export const BUILD_PLATFORMS = [...APP_PLATFORMS, 'cross_platform'] as const;

export const BUILD_STATUSES = ['QUEUED', 'PROCESSING', 'READY', 'FAILED'] as const;

export const PROTECTION_LEVELS = ['none', 'standard', 'hardened'] as const;

export const DELIVERY_MODES = ['all', 'released_only'] as const;

export const LICENSE_TYPES = ['perpetual', 'subscription', 'trial'] as const;

/** node_locked: devices that may activate; floating: copies that may run at once. */
export const SEAT_MODELS = ['node_locked', 'floating'] as const;

/** The license list's `status` filter (lower case, unlike the licenses' own status). */
export const LICENSE_STATUS_FILTERS = ['active', 'revoked', 'expired', 'demo'] as const;

/** A meter's period: UTC calendar day, month or year, or the license's whole life. */
export const METER_PERIODS = ['day', 'month', 'year', 'lifetime'] as const;
