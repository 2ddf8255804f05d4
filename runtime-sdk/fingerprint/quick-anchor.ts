import type { Platform } from '../platform.js';

/**
 * The cheap OS-level identity (no hardware probes) that unlocks the remembered fingerprint on a
 * warm start. It only saves time: the full fingerprint is still computed in the background and a
 * mismatch discards the cache. Undefined when the OS identity cannot be read: every start probes.
 */
export async function quickAnchor(platform: Platform): Promise<string | undefined> {
  const machineId = await platform.machineId();
  if (!machineId) return undefined;
  return ['latchkey-anchor/v1', platform.name, platform.arch, machineId, platform.cpuModel()].join('\n');
}
