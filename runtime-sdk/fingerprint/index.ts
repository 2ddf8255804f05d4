import type { Platform } from '../platform.js';
import { canonicalize, fingerprintHash, selectComponents } from './canonical.js';
import { readComponents, systemInformationProbes, type ComponentName, type Probe } from './components.js';

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
}

export async function computeFingerprint(options: FingerprintOptions): Promise<Fingerprint> {
  const probes = options.probes ?? systemInformationProbes(options.platform);
  const reading = await readComponents(probes, options.timeoutMs);
  const selected = selectComponents(reading.components, options.only);
  const only = options.only;
  return {
    hash: fingerprintHash(canonicalize(selected), options.salt),
    components: [...selected.keys()].sort(),
    complete: only ? only.every((name) => selected.has(name)) : reading.complete,
  };
}

export { COMPONENT_NAMES, type ComponentName, type Components, type Probe } from './components.js';
