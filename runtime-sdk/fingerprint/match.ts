/**
 * Component-tolerant device matching, the same rule on the device and on the authority: a device is
 * the one on record when its OS machine id matches and enough of its other components do, so a new
 * network card, a docking station's MAC or a replaced disk does not make it a new device (nor use up
 * a seat). docs/protocol.md, "Fingerprint", states the rule.
 */
import type { ComponentHashes, ComponentName } from './components.js';

export interface MatchRule {
  /** Components besides the machine id that must match. Default 2. */
  others: number;
}

export const DEFAULT_MATCH_RULE: MatchRule = { others: 2 };

/** The component every match needs: the OS's own id of the installation. */
export const MACHINE_ID: ComponentName = 'os.machine_id';

/**
 * True when `presented` is the device `recorded` describes: the machine id present in both and equal,
 * and at least `rule.others` other components equal, or all but one of them when fewer are on record
 * (a virtual machine fingerprinted from its CPU and MAC alone keeps its seat when the MAC changes).
 * Only components present in both count; comparisons are constant-time per hash.
 */
export function deviceMatches(recorded: ComponentHashes, presented: ComponentHashes, rule: MatchRule = DEFAULT_MATCH_RULE): boolean {
  const machineId = recorded[MACHINE_ID];
  if (machineId === undefined || !sameHash(machineId, presented[MACHINE_ID])) return false;
  const others = (Object.keys(recorded) as ComponentName[]).filter((name) => name !== MACHINE_ID);
  const needed = Math.min(rule.others, Math.max(others.length - 1, 0));
  const matching = others.filter((name) => sameHash(recorded[name]!, presented[name])).length;
  return matching >= needed;
}

function sameHash(a: string, b: string | undefined): boolean {
  if (b === undefined || a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
