/**
 * Offline (air-gapped) activation: a request file written by the SDK on a machine without network
 * is answered with a license file, a JWS the SDK imports without ever reaching the authority
 * (docs/protocol.md, "Offline activation"). The activation itself is the online one, rules and all.
 */
import { ACTIVATION_REQUEST_FORMAT, DOCUMENT_TYPES, LICENSE_FILE_FORMAT, type LicenseFileClaims } from '@latchkey/runtime-sdk/protocol';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';
import { RequestError } from '../errors.js';
import { assertUsable, EFFECTIVE_STATUS_SQL, type LicenseStatus } from '../licenses/rules.js';
import { RUNTIME_LIMITS_DESCRIPTION, describeLicenseLimit } from '../http/license-limits.js';
import { setRateLimitHeaders } from '../http/rate-window.js';
import { defineRoute } from '../http/route.js';
import type { RateLimitReport } from '../http/license-limits.js';
import type { Keyring } from '../signing/keyring.js';
import { ActivateBody } from './schemas.js';
import type { ActivationsService } from './service.js';

/** How long a license file may wait before it is imported, at most: it also never outlives its token. */
export const LICENSE_FILE_IMPORT_DAYS = 30;
const DAY_SECONDS = 86_400;

export const ActivationRequestBody = ActivateBody.extend({
  format: z.literal(ACTIVATION_REQUEST_FORMAT).describe(`Always "${ACTIVATION_REQUEST_FORMAT}"`),
  app_id: z.string().min(1).max(64).describe('The app the SDK is configured for; must be the license key’s app'),
  device_key: ActivateBody.shape.device_key.unwrap().describe('The installation’s X25519 public key; the license file is bound to it'),
  created_at: z.string().max(64).optional().describe('When the SDK wrote the file (its local clock); informative only'),
});
export type ActivationRequestInput = z.infer<typeof ActivationRequestBody>;

export const OfflineActivationResult = z.object({
  license_file: z.string().describe('The license file’s whole text: a compact JWS (typ latchkey-license-file+jwt) the SDK imports'),
  file_expires_at: z.iso.datetime().describe('The import deadline: the earlier of the token’s expiry and 30 days after issue'),
});
export type OfflineActivationResult = z.infer<typeof OfflineActivationResult>;

const seconds = (iso: string) => Math.floor(new Date(iso).getTime() / 1000);

export function createOfflineActivation(deps: { db: Db; clock: Clock; keyring: Keyring; activations: ActivationsService }) {
  const { db, clock, keyring, activations } = deps;
  return {
    /**
     * Refuses a request naming another app than its key's (read like an unknown key, telling nothing)
     * and, once the license is found usable, a floating license: its seat would be a lease that no
     * heartbeat renews, its token and file dead within the lease's TTL. Then activates exactly as
     * `POST /v1/licenses/activate` and wraps the answer in a license file.
     */
    async activateOffline(request: ActivationRequestInput, report: RateLimitReport): Promise<OfflineActivationResult> {
      const { format: _format, app_id: appId, created_at: _createdAt, ...activation } = request;
      // The file and the token it carries are dated the same second: grace counts from either.
      const now = clock.now();
      const owner = await db('licenses')
        .where({ license_key: activation.license_key })
        .first<{ app_id: string; seat_model: string; effective_status: LicenseStatus } | undefined>(
          'app_id',
          'seat_model',
          db.raw(`(${EFFECTIVE_STATUS_SQL}) AS effective_status`, [now]),
        );
      if (owner && owner.app_id !== appId) throw new RequestError('INVALID_LICENSE_KEY', 'This license key is not valid for this app');
      if (owner?.seat_model === 'floating') {
        assertUsable(owner);
        throw new RequestError(
          'FLOATING_LICENSE_ONLINE_ONLY',
          'This is a floating license: its seats are held by running copies that check in online, so it cannot be activated offline. Activate it on a computer with network access, or ask the vendor for a node-locked license',
        );
      }
      const grant = await activations.activate(activation, report, now);
      const iat = Math.floor(now.getTime() / 1000);
      const fileExpiresAt = Math.min(seconds(grant.expires_at), iat + LICENSE_FILE_IMPORT_DAYS * DAY_SECONDS);
      const claims: LicenseFileClaims = {
        iss: 'latchkey',
        format: LICENSE_FILE_FORMAT,
        app_id: appId,
        device: activation.device_fingerprint,
        device_key: activation.device_key,
        license_key: activation.license_key,
        token: grant.token,
        iat,
        file_expires_at: fileExpiresAt,
      };
      return { license_file: keyring.sign(DOCUMENT_TYPES.licenseFile, claims), file_expires_at: new Date(fileExpiresAt * 1000).toISOString() };
    },
  };
}
export type OfflineActivation = ReturnType<typeof createOfflineActivation>;

export function offlineActivationRoutes(offline: OfflineActivation) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/licenses/offline-activation',
      operationId: 'activateLicenseOffline',
      tag: 'Runtime',
      auth: 'none',
      rateLimit: 'runtime',
      summary: 'Offline activation: answers an activation request file (written by the SDK on an air-gapped machine) with a signed license file',
      description:
        'The body is the request file as the SDK wrote it (docs/protocol.md, "Offline activation"). The activation is the online one: ' +
        'unknown or revoked key, or a key of another app than `app_id`, 401 INVALID_LICENSE_KEY; expired 403 LICENSE_EXPIRED; unknown build ' +
        `404 BUILD_NOT_FOUND; past ${describeLicenseLimit('activation')} 429 (Retry-After); a new device over the limit 403 DEVICE_LIMIT_EXCEEDED; ` +
        'a trial already used on the computer 403 TRIAL_ALREADY_USED. A floating license (seats held by running copies that renew them ' +
        'online) 409 FLOATING_LICENSE_ONLINE_ONLY, nothing taken. A device already activated takes no slot, so a fresh request file ' +
        `extends an air-gapped machine. ${RUNTIME_LIMITS_DESCRIPTION}`,
      body: ActivationRequestBody,
      response: OfflineActivationResult,
      errors: [401, 403, 404, 409],
      handler: ({ body, response }) => offline.activateOffline(body, (decision) => setRateLimitHeaders(response, decision)),
    }),
  ];
}
