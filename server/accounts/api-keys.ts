import type { Clock } from '../clock.js';
import { randomHex, randomSecret, safeEqual, sha256Hex } from '../crypto/secrets.js';
import { assertThat } from '../errors.js';
import type { ApiKeyScope } from '../http/auth.js';
import type { ApiKeyRow, ApiKeyStore } from './api-key-store.js';
import type { CredentialCache } from './credential-cache.js';

/** Scopes of a key created or rotated without any: what every key could do before keys had scopes. */
export const DEFAULT_API_KEY_SCOPES: ApiKeyScope[] = ['admin'];
export const MAX_ACTIVE_API_KEYS = 20;
/** A key's `last_used_at` is written at most this often: not a write per request. */
export const KEY_USE_RECORDED_EVERY_MS = 60_000;
const MAX_USES_REMEMBERED = 10_000;

// A key carries its lookup id beside the secret, so verification is one indexed read plus a
// constant-time comparison of hashes: `lk_<id>_<secret>`.
const API_KEY = /^lk_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/;

export interface VerifiedApiKey {
  developerId: string;
  keyId: string;
  scopes: readonly ApiKeyScope[];
}

export interface ApiKeySpec {
  name?: string | undefined;
  scopes?: ApiKeyScope[] | undefined;
}

/** How a key is shown: its id and public prefix, never its secret (only in the answer that creates it). */
export const apiKeyView = (k: ApiKeyRow) => ({
  id: k.id,
  prefix: `lk_${k.id}`,
  name: k.name,
  scopes: k.scopes,
  created_at: k.created_at.toISOString(),
  last_used_at: k.last_used_at?.toISOString() ?? null,
});

export function createApiKeys(deps: { store: ApiKeyStore; clock: Clock; cache: CredentialCache<{ developerId: string; scopes: readonly ApiKeyScope[] }> }) {
  const { store, clock, cache } = deps;
  /** Key id -> the latest use this process recorded or read, in epoch ms. */
  const usesRecorded = new Map<string, number>();

  function newKey(spec: ApiKeySpec) {
    const id = randomHex(12);
    const secret = randomSecret(32);
    const scopes = [...new Set(spec.scopes?.length ? spec.scopes : DEFAULT_API_KEY_SCOPES)];
    return { key: { id, name: spec.name ?? 'API key', scopes, secretHash: sha256Hex(secret) }, plain: `lk_${id}_${secret}` };
  }

  /** Writes the key's `last_used_at` when the latest use recorded is a minute old (`known`: the one the database had). */
  async function recordUse(keyId: string, known?: Date | null): Promise<void> {
    const now = clock.now();
    const recorded = Math.max(usesRecorded.get(keyId) ?? -Infinity, known?.getTime() ?? -Infinity);
    if (now.getTime() - recorded < KEY_USE_RECORDED_EVERY_MS) {
      usesRecorded.set(keyId, recorded);
      return;
    }
    if (usesRecorded.size >= MAX_USES_REMEMBERED) usesRecorded.delete(usesRecorded.keys().next().value!);
    usesRecorded.set(keyId, now.getTime());
    await store.recordUse(keyId, now, KEY_USE_RECORDED_EVERY_MS);
  }

  return {
    isApiKey: (credential: string) => credential.startsWith('lk_'),

    /** The developer and scopes of the active API key, else null; from this process's cache when it may trust it. */
    async verify(plain: string): Promise<VerifiedApiKey | null> {
      const m = API_KEY.exec(plain);
      if (!m) return null;
      const keyId = m[1]!;
      const secretHash = sha256Hex(m[2]!);
      const cached = cache.lookup(keyId, secretHash);
      if (cached) {
        await recordUse(keyId);
        return { ...cached, keyId };
      }
      const lookupGeneration = cache.generation();
      const row = await store.findActive(keyId);
      if (!row || !safeEqual(row.secret_hash, secretHash)) return null;
      cache.remember(keyId, { developerId: row.developer_id, scopes: row.scopes }, secretHash, lookupGeneration);
      await recordUse(keyId, row.last_used_at);
      return { developerId: row.developer_id, keyId, scopes: row.scopes };
    },

    list: (developerId: string) => store.listActive(developerId),

    async create(developerId: string, spec: ApiKeySpec) {
      const { key, plain } = newKey(spec);
      const row = await store.create(developerId, key, MAX_ACTIVE_API_KEYS);
      return { ...apiKeyView(row), api_key: plain };
    },

    /** A new key replaces every active one; answers once no server process accepts those any more. */
    async rotate(developerId: string, spec: ApiKeySpec) {
      const { key, plain } = newKey(spec);
      const { key: row, revoked } = await store.rotate(developerId, key);
      await cache.awaitDropped(revoked);
      return { ...apiKeyView(row), api_key: plain };
    },

    /** 404 unless the developer has an active key by this id: said before anything else is asked of them. */
    async assertActive(developerId: string, keyId: string): Promise<void> {
      assertThat(await store.isActive(developerId, keyId), 'API_KEY_NOT_FOUND', 'You have no active API key with this id');
    },

    /** Answers once no server process accepts the key any more. */
    async revoke(developerId: string, keyId: string): Promise<void> {
      assertThat(await store.revoke(developerId, keyId), 'API_KEY_NOT_FOUND', 'You have no active API key with this id');
      await cache.awaitDropped([keyId]);
    },
  };
}

export type ApiKeys = ReturnType<typeof createApiKeys>;
