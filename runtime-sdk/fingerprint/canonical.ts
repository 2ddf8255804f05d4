/**
 * Canonical form of the components and the salted hash sent to the authority. The salt is the app's
 * `fingerprint_salt`, so one machine gives unrelated fingerprints for different apps.
 */
import { createHmac } from 'node:crypto';
import { HARDWARE_COMPONENTS, type ComponentHashes, type ComponentName, type Components } from './components.js';

/** Bumped only with a deliberate migration: every device would look new to the authority. */
const CANONICAL_VERSION = 'latchkey-fingerprint/v1';

/** Values firmware vendors ship when a field was never filled in; they identify nothing. */
const PLACEHOLDERS = new Set([
  '-',
  'none',
  'n/a',
  'na',
  'unknown',
  'default string',
  'not specified',
  'not applicable',
  'not available',
  'to be filled by o.e.m.',
  'system serial number',
  'chassis serial number',
  'base board serial number',
  '0123456789',
  '03000200-0400-0500-0006-000700080009',
]);

export function normalizeComponent(value: string | undefined): string | undefined {
  const normalized = value?.trim().replace(/\s+/g, ' ').toLowerCase();
  if (!normalized || PLACEHOLDERS.has(normalized)) return undefined;
  // All zeros or all F's (with separators): an unset UUID or serial.
  if (/^[0\-:. ]+$/.test(normalized) || /^[f\-:. ]+$/.test(normalized)) return undefined;
  return normalized;
}

/**
 * The components a fingerprint is made of, normalised. Given `only` (the set this installation was
 * activated with), exactly those: a component that became readable later (running as root exposes
 * DMI ids) changes nothing. Without it: everything readable, the MAC only when no hardware
 * identifier exists (VMs, containers), since network cards come and go.
 */
export function selectComponents(components: Components, only?: readonly ComponentName[]): Map<ComponentName, string> {
  const selected = new Map<ComponentName, string>();
  for (const [name, value] of Object.entries(components) as [ComponentName, string | undefined][]) {
    const normalized = normalizeComponent(value);
    if (normalized && (!only || only.includes(name))) selected.set(name, normalized);
  }
  if (!only && HARDWARE_COMPONENTS.some((name) => selected.has(name))) selected.delete('net.primary_mac');
  return selected;
}

/** `name=value` lines in a fixed order under a version line. */
export function canonicalize(selected: Map<ComponentName, string>): string {
  const lines = [...selected.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, value]) => `${name}=${value}`);
  return [CANONICAL_VERSION, ...lines].join('\n');
}

/**
 * HMAC-SHA-256 keyed by the app's salt (both UTF-8), lower-case hex: the only form that leaves the
 * process. node:crypto's, as a first start computes several and a pure-JavaScript HMAC, not yet
 * compiled, cost it milliseconds.
 */
export function fingerprintHash(canonical: string, salt: string): string {
  return createHmac('sha256', salt).update(canonical, 'utf8').digest('hex');
}

/**
 * Each component on its own, salted the same way: what component-tolerant matching compares
 * (match.ts), so a changed network card is one differing hash rather than a different device.
 */
export function componentHashes(selected: Map<ComponentName, string>, salt: string): ComponentHashes {
  const hashes: ComponentHashes = {};
  for (const [name, value] of selected) hashes[name] = fingerprintHash(`${CANONICAL_VERSION}/component\n${name}=${value}`, salt);
  return hashes;
}
