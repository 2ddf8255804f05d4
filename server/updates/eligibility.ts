import { PLATFORMS } from '../apps/schemas.js';
import { engineSupportsUpdates } from './engine-version.js';
import type { AdoptionState } from './store.js';

/** An operating system of the platform labels (`win-x64` and `win-arm64` are both `win`). */
export type OperatingSystem = 'win' | 'linux' | 'mac';

const SINGLE_OS_PLATFORMS = new Set<string>(PLATFORMS);

/** The operating system of a platform label, or null for a build for no single one (`cross_platform`) or a label we do not know. */
export function operatingSystemOf(platform: string): OperatingSystem | null {
  if (!SINGLE_OS_PLATFORMS.has(platform)) return null;
  return platform.slice(0, platform.indexOf('-')) as OperatingSystem;
}

/**
 * docs/contract.md push rule 5: a build is offered to the devices whose operating system is the
 * build's, whatever their architecture (a `win-x64` build runs on `win-arm64` under emulation, and
 * the developer chose to push it); a build for no single operating system to every device. A device
 * whose platform is not known gets only the latter.
 */
export function buildSuitsDevice(buildPlatform: string, devicePlatform: string | null): boolean {
  const buildOs = operatingSystemOf(buildPlatform);
  if (buildOs === null) return true;
  return devicePlatform !== null && operatingSystemOf(devicePlatform) === buildOs;
}

/** What an update check of one device learns about the push that applies to its license. */
export interface PushCandidate {
  targetBuildId: string;
  targetPlatform: string;
  /** The device's platform, engine and running build: as the check sent them, else as on record. */
  devicePlatform: string | null;
  engineVersion: string | null;
  runningBuildId: string | null;
  /** What the device did with the target build so far. */
  adoption: AdoptionState | null;
}

/**
 * Whether a device gets the push: `offer` (a signed manifest), `running` (it runs the target
 * already: counts as installed), or `withheld`: an engine that cannot take an update (older than
 * the minimum, or unknown), another operating system, or a device that skipped or installed the
 * build. A failed install is offered again: the runtime backs off (1, 6, 24 hours) on its own.
 */
export function pushDecision(c: PushCandidate): 'offer' | 'running' | 'withheld' {
  if (c.engineVersion === null || !engineSupportsUpdates(c.engineVersion)) return 'withheld';
  if (!buildSuitsDevice(c.targetPlatform, c.devicePlatform)) return 'withheld';
  if (c.runningBuildId === c.targetBuildId) return 'running';
  if (c.adoption === 'installed' || c.adoption === 'skipped') return 'withheld';
  return 'offer';
}
