/**
 * What the cache keys are bound to besides the fingerprint (cache-keys.ts), recorded in the envelope:
 * - `os-store`: a secret the OS store keeps for this app and user (os-key-store.ts);
 * - `install`: a random id made with this installation's cache, where the machine has no OS store.
 * A cache written by an SDK before either (no record) keeps its fingerprint-only keys.
 */
import { randomBytes } from 'node:crypto';
import type { OsKeyStore, OsKeyStoreName } from './os-key-store.js';

export type BindingRecord = { kind: 'os-store'; store: OsKeyStoreName } | { kind: 'install'; id: string };

export interface CacheBinding {
  /** Undefined for a cache of an earlier SDK, which stays bound to the fingerprint alone. */
  record: BindingRecord | undefined;
  /** Mixed into the key derivation; the caller moves it into secret memory and zeroes this copy. */
  material: Uint8Array | undefined;
  /**
   * The OS store kept the cache's secret but did not give it back at this start: the cache does
   * not open in this run, and whatever is sealed next (a new grant) is bound anew in this store
   * first (`bindAnew`).
   */
  unanswered?: OsKeyStore;
}

const INSTALL_ID_BYTES = 16;

export function isBindingRecord(value: unknown): value is BindingRecord {
  const record = value as Partial<Record<string, unknown>> | null;
  if (!record || typeof record !== 'object') return false;
  if (record.kind === 'install') return typeof record.id === 'string' && Buffer.from(record.id, 'base64').length === INSTALL_ID_BYTES;
  return record.kind === 'os-store' && ['secret-service', 'keychain', 'dpapi'].includes(record.store as string);
}

/**
 * The binding of an existing cache (`recorded`; null when there is none or it did not read), or a new
 * one. A cache bound to an OS store secret that does not come back cannot open. The secret is not
 * replaced then: it may be gone for good (another user, a reset keyring) or only for now (a
 * timeout, a locked keyring, a file an antivirus holds), and a new secret would lock the cache out
 * for good even when the old one answers at the next start. The next grant binds anew instead.
 */
export async function resolveBinding(recorded: BindingRecord | undefined | null, store: OsKeyStore | undefined): Promise<CacheBinding> {
  if (recorded === undefined) return { record: undefined, material: undefined };
  if (recorded?.kind === 'install') return { record: recorded, material: Buffer.from(recorded.id, 'base64') };
  if (recorded?.kind === 'os-store' && store?.name === recorded.store) {
    const secret = await store.load();
    return secret ? { record: recorded, material: secret } : { record: recorded, material: undefined, unanswered: store };
  }
  return bindAnew(store);
}

/** A new binding: the store's secret for this app (made if it has none), else the installation's id. */
export async function bindAnew(store: OsKeyStore | undefined): Promise<CacheBinding> {
  const secret = store ? ((await store.load()) ?? (await store.create())) : undefined;
  if (store && secret) return { record: { kind: 'os-store', store: store.name }, material: secret };
  const id = randomBytes(INSTALL_ID_BYTES);
  return { record: { kind: 'install', id: id.toString('base64') }, material: id };
}
