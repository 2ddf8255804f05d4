import { DEVICE_KEY_PATTERN } from '@latchkey/runtime-sdk/engine';
import {
  COMPONENT_NAMES,
  FINGERPRINT_PATTERN,
  TAMPER_KINDS,
  type ComponentHashes,
  type ComponentName,
  type TamperReportRequest,
  type DeactivateRequest,
  type DeactivateAnswer,
} from '@latchkey/runtime-sdk/protocol';
import { z } from 'zod';
import { Platform } from '../apps/schemas.js';
import { LicenseKeyInput } from '../licenses/license-key.js';

// Runtime bodies use z.object (unknown fields dropped, not refused): apps in the field run SDKs
// older and newer than this server, and a new optional field must not lock them out.

const Fingerprint = z
  .string()
  .regex(FINGERPRINT_PATTERN, 'must be the SDK fingerprint hash: 64 lower-case hex characters')
  .describe('Salted SHA-256 of the device, computed by the SDK; raw hardware identifiers are never sent');

/**
 * The salted hash of each component the fingerprint was made of. Names this server does not know (a
 * newer SDK) are dropped rather than refused, like unknown fields; at most 16 entries.
 */
const FingerprintComponents = z
  .record(z.string().regex(/^[a-z][a-z._]{0,31}$/), z.string().regex(FINGERPRINT_PATTERN, 'must be a salted component hash: 64 lower-case hex characters'))
  .refine((components) => Object.keys(components).length <= 16, 'at most 16 components')
  .transform((components): ComponentHashes => {
    const known: ComponentHashes = {};
    for (const name of COMPONENT_NAMES) if (components[name] !== undefined) known[name as ComponentName] = components[name];
    return known;
  })
  .describe(
    'Optional, beside device_fingerprint: the salted hash of each component (os.machine_id, system.uuid, board.serial, disk.serial, cpu, ...). ' +
      'A device not on record by its fingerprint is recognised as one that is when the machine id and at least two other components match (docs/protocol.md, Fingerprint)',
  );

const DeviceKey = z
  .string()
  .regex(DEVICE_KEY_PATTERN, 'must be an X25519 public key: 32 bytes, base64url without padding')
  .describe("The installation's X25519 public key; a protected build's content key is wrapped to it (docs/protocol.md)");

const BuildIdField = z.string().min(1).max(64);

const Version = z.string().regex(/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/, 'must be a version such as 1.4.2');

/** What the runtime tells about the device on each activation and refresh, all optional. */
const DeviceReport = z.object({
  platform: Platform.optional(),
  engine_version: Version.optional().describe('Version of the runtime engine in the protected build'),
  app_version: Version.optional().describe('Installed app version; recorded on the first launch after an install'),
});
export type DeviceReport = z.infer<typeof DeviceReport>;

export const ActivateBody = DeviceReport.extend({
  license_key: LicenseKeyInput,
  device_fingerprint: Fingerprint,
  fingerprint_components: FingerprintComponents.optional(),
  build_id: BuildIdField.nullable().default(null).describe('null: an app embedding the SDK without a protected build'),
  device_key: DeviceKey.optional(),
});
export type ActivateInput = z.infer<typeof ActivateBody>;

const MAX_TOKEN_CHARS = 16_384;

export const RefreshBody = DeviceReport.extend({
  token: z.string().min(1).max(MAX_TOKEN_CHARS).optional().describe('The current runtime token; an expired one is accepted if genuine'),
  license_key: LicenseKeyInput.optional(),
  device_fingerprint: Fingerprint.optional().describe('With license_key; or with a token, the fingerprint as read now (with fingerprint_components)'),
  fingerprint_components: FingerprintComponents.optional().describe(
    'With license_key and device_fingerprint, as at activation. With a token and device_fingerprint (then required): the device as read now, ' +
      "for a token whose device's record another installation renamed (docs/protocol.md, Fingerprint)",
  ),
  build_id: BuildIdField.nullable().default(null).describe('The running build, whose content key the answer carries when it is a protected build'),
  device_key: DeviceKey.optional().describe('With a token, recorded only for a device that has none yet; with the license key, it replaces the one on record'),
}).transform(({ token, license_key, device_fingerprint, fingerprint_components, build_id, device_key, ...report }, ctx) => {
  const content = { buildId: build_id, deviceKey: device_key };
  if (token !== undefined) {
    if (device_fingerprint === undefined) return { credential: { kind: 'token' as const, token }, report, content };
    if (fingerprint_components !== undefined) {
      return { credential: { kind: 'token' as const, token, readNow: { device: device_fingerprint, components: fingerprint_components } }, report, content };
    }
    ctx.addIssue({ code: 'custom', path: ['fingerprint_components'], message: 'with a token, device_fingerprint needs fingerprint_components' });
    return z.NEVER;
  }
  if (license_key !== undefined && device_fingerprint !== undefined) {
    return { credential: { kind: 'license_key' as const, license_key, device_fingerprint, fingerprint_components }, report, content };
  }
  ctx.addIssue({ code: 'custom', message: 'send either token, or license_key and device_fingerprint' });
  return z.NEVER;
});
export type RefreshInput = z.infer<typeof RefreshBody>;

const Policy = z.object({
  device_limit: z.number().int().describe('Floating: the seats in use at once'),
  offline_grace_hours: z.number().int(),
  seat_model: z.literal('floating').optional().describe("Only on a floating license's answer: the token lives as long as the device's lease"),
  lease_ttl_minutes: z.number().int().optional().describe('With seat_model: the lease life each refresh (heartbeat) renews'),
});

export const TamperReportBody = z.object({
  token: z.string().min(1).max(MAX_TOKEN_CHARS).describe('The runtime token the installation holds; an expired one is accepted if genuine'),
  build_id: BuildIdField.describe('The protected build that was found modified'),
  kind: z.enum(TAMPER_KINDS).describe('integrity: its signed integrity check failed; vault: its encrypted app did not open with a valid key'),
}) satisfies z.ZodType<TamperReportRequest>;

export type TamperReportInput = z.infer<typeof TamperReportBody>;

export const DeactivateBody = z.object({
  token: z.string().min(1).max(MAX_TOKEN_CHARS).describe('The runtime token of the device to deactivate; an expired one is accepted if genuine'),
}) satisfies z.ZodType<DeactivateRequest>;
export type DeactivateInput = z.infer<typeof DeactivateBody>;

export const DeactivationResult = z.object({
  license_id: z.string(),
  deactivated: z.boolean().describe('false: the device was no longer activated on the license (already deactivated, or reset); nothing was counted'),
  deactivations_remaining: z.number().int().describe('Deactivations from the app this license has left in the current 30 days'),
  next_deactivation_available_at: z.iso.datetime().describe('Now when one is left, else when the oldest counted one leaves the 30-day window'),
}) satisfies z.ZodType<DeactivateAnswer>;
export type DeactivationResult = z.infer<typeof DeactivationResult>;

export const CheckinBody = z.object({
  token: z.string().min(1).max(MAX_TOKEN_CHARS).describe('The runtime token the installation holds; an expired one is accepted if genuine'),
});
export type CheckinInput = z.infer<typeof CheckinBody>;

export const ActivationResult = z.object({
  token: z.string().describe('Compact JWS (EdDSA); verify with the JWK Set at /v1/public/keys'),
  expires_at: z.iso.datetime().describe("When the token stops working offline: issue time plus offline_grace_hours; a floating license's: its lease's end"),
  policy: Policy,
});
export type ActivationResult = z.infer<typeof ActivationResult>;
