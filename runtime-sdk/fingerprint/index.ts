import type { Platform } from '../platform.js';
import { canonicalize, componentHashes, fingerprintHash, selectComponents } from './canonical.js';
import { hardwareProbes, importSystemInformation, readComponentsOnce, type ComponentHashes, type ComponentName, type Probe, type SystemInformationLoader } from './components.js';

export interface Fingerprint {
  /** 64 lower-case hex: what the authority stores and the token is bound to. */
  hash: string;
  /** Which components it was made of (names only); kept with the cache so later readings use the same. */
  components: ComponentName[];
  /** The salted hash of each of those components: what matching tolerates a change in (match.ts). */
  componentHashes: ComponentHashes;
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
  // The hardware of one machine, read once per process (components.ts): keyed by the probes given, else by the platform.
  const reading = await readComponentsOnce(
    options.probes ?? options.platform,
    async () => options.probes ?? (await hardwareProbes(options.platform, options.loadSystemInformation ?? importSystemInformation, options.onDegraded ?? (() => {}))),
    options.timeoutMs,
  );
  const selected = selectComponents(reading.components, options.only);
  const only = options.only;
  return {
    hash: fingerprintHash(canonicalize(selected), options.salt),
    components: [...selected.keys()].sort(),
    componentHashes: componentHashes(selected, options.salt),
    complete: only ? only.every((name) => selected.has(name)) : reading.complete,
  };
}

export { COMPONENT_NAMES, importSystemInformation, type ComponentHashes, type ComponentName, type Components, type Probe, type SystemInformationLoader } from './components.js';
