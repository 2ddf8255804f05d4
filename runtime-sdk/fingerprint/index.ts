import type { Platform } from '../platform.js';
import { canonicalize, fingerprintHash, selectComponents } from './canonical.js';
import { hardwareProbes, importSystemInformation, readComponents, type ComponentName, type Probe, type SystemInformationLoader } from './components.js';

export interface Fingerprint {
  /** 64 lower-case hex: what the authority stores and the token is bound to. */
  hash: string;
  /** Which components it was made of (names only); kept with the cache so later readings use the same. */
  components: ComponentName[];
  /** False when a component it should contain could not be read in time: the hash may be off. */
  complete: boolean;
}

export interface FingerprintOptions {
  salt: string;
  platform: Platform;
  timeoutMs: number;
  /** The component set of an existing activation; absent for a new one. */
  only?: readonly ComponentName[];
  /** Replaces the systeminformation probes (tests, unusual hosts). */
  probes?: Probe[];
  /** Default: imported where the app carries it (see components.ts). */
  loadSystemInformation?: SystemInformationLoader;
  /** Told why, when the hardware probes cannot run and the fingerprint is the OS machine id alone. */
  onDegraded?(reason: string): void;
}

export async function computeFingerprint(options: FingerprintOptions): Promise<Fingerprint> {
  const probes = options.probes ?? (await hardwareProbes(options.platform, options.loadSystemInformation ?? importSystemInformation, options.onDegraded ?? (() => {})));
  const reading = await readComponents(probes, options.timeoutMs);
  const selected = selectComponents(reading.components, options.only);
  const only = options.only;
  return {
    hash: fingerprintHash(canonicalize(selected), options.salt),
    components: [...selected.keys()].sort(),
    complete: only ? only.every((name) => selected.has(name)) : reading.complete,
  };
}

export { COMPONENT_NAMES, importSystemInformation, type ComponentName, type Components, type Probe, type SystemInformationLoader } from './components.js';
