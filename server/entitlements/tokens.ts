import { createHmac } from 'node:crypto';
import type { MasterKey } from '../crypto/master-key.js';
import { randomSecret, safeEqual, sha256Hex } from '../crypto/secrets.js';

/** docs/contract.md: a rotated webhook secret keeps working for 24 hours. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;

/** Where a webhook URL token or secret is stored: its SHA-256, under a prefix per kind. */
export const webhookTokenHash = (token: string) => sha256Hex(`entitlement-webhook-token:${token}`);
export const webhookSecretHash = (secret: string) => sha256Hex(`entitlement-webhook-secret:${secret}`);

/** A new URL token and secret: 256 random bits each, URL-safe. */
export const newWebhookToken = () => randomSecret(32);
export const newWebhookSecret = () => `whsec_${randomSecret(32)}`;

export const webhookUrl = (publicBaseUrl: string, token: string) => `${publicBaseUrl}/v1/entitlement-webhooks/${token}`;

export interface StoredSecrets {
  secret_hash: string;
  previous_secret_hash: string | null;
  previous_secret_expires_at: Date | null;
}

/** The current secret, or the one it replaced until its overlap ends; compared in constant time. */
export function secretMatches(stored: StoredSecrets, presented: string, now: Date): boolean {
  return secretHashMatches(stored, webhookSecretHash(presented), now);
}

/** `secretMatches` for a presented secret already hashed. */
export function secretHashMatches(stored: StoredSecrets, hash: string, now: Date): boolean {
  const current = safeEqual(hash, stored.secret_hash);
  const previous =
    stored.previous_secret_hash !== null &&
    stored.previous_secret_expires_at !== null &&
    stored.previous_secret_expires_at.getTime() > now.getTime() &&
    safeEqual(hash, stored.previous_secret_hash);
  return current || previous;
}

/**
 * The permanent delivery URL's token of a store license: an HMAC of its id under a key derived from
 * the master key, so every answer (a duplicate, a noop) can name the same URL again while the
 * database stores only its SHA-256. A redact deletes the stored hash: the URL stops working.
 */
export function createDeliveryTokens(masterKey: MasterKey, deliveryUrlBase: string) {
  const key = masterKey.derive('store-delivery-page');
  const tokenOf = (storeLicenseId: string) => createHmac('sha256', key).update(storeLicenseId).digest('base64url');
  return {
    tokenOf,
    hashOf: (token: string) => sha256Hex(`store-delivery-page:${token}`),
    urlOf: (storeLicenseId: string) => `${deliveryUrlBase}/d/${tokenOf(storeLicenseId)}`,
  };
}

export type DeliveryTokens = ReturnType<typeof createDeliveryTokens>;
