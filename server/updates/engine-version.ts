/**
 * docs/contract.md, Versioning: update push needs runtime engine `1.0.0.0.0.178` or newer. Engines 76 to 177
 * carry the check but fail to verify updates silently, engines before 76 lack it; a device on one
 * is offered nothing and counted as unable until its customer installs a fresh build.
 */
export const MIN_UPDATE_ENGINE = '1.0.0.0.0.178';

const SIX_NUMERIC_PARTS = /^\d{1,9}(\.\d{1,9}){5}$/;
const parts = (version: string) => version.split('.').map(Number);
const MIN_PARTS = parts(MIN_UPDATE_ENGINE);

/**
 * Whether an engine can take a pushed update: its six numeric parts compare, in order, at least
 * equal to the minimum. Anything else (fewer parts, letters) counts as older, since nothing shows
 * it is new enough.
 */
export function engineSupportsUpdates(engineVersion: string): boolean {
  if (!SIX_NUMERIC_PARTS.test(engineVersion)) return false;
  const have = parts(engineVersion);
  for (let i = 0; i < MIN_PARTS.length; i++) {
    if (have[i]! !== MIN_PARTS[i]!) return have[i]! > MIN_PARTS[i]!;
  }
  return true;
}
