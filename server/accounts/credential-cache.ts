import { performance } from 'node:perf_hooks';
import { safeEqual } from '../crypto/secrets.js';
import { LISTENER_FRESH_MS, type NotificationListener } from '../db/notification-listener.js';

/**
 * The channels of one kind of credential: `revoked` is sent in the revoking transaction with each
 * id; delivered to every process at commit. `dropped` is each process's answer once it dropped the
 * id, from its listener session.
 */
export interface CredentialChannels {
  revoked: string;
  dropped: string;
}

/** API keys, by key id. */
export const API_KEY_CHANNELS: CredentialChannels = { revoked: 'latchkey_api_key_revoked', dropped: 'latchkey_api_key_dropped' };
export const API_KEY_REVOKED_CHANNEL = API_KEY_CHANNELS.revoked;
/** Sign-in sessions (a login's refresh-token family, which its access tokens name), by session id. */
export const SESSION_CHANNELS: CredentialChannels = { revoked: 'latchkey_session_revoked', dropped: 'latchkey_session_dropped' };

/** A remembered credential is looked up again after this long, whatever else happens. */
const TTL_MS = 60_000;
const MAX_KEYS = 10_000;
/** Answers kept for a rotation that has not asked yet (a fast process can answer before it does). */
const ANSWER_KEPT_MS = 4 * LISTENER_FRESH_MS;

interface Remembered<V> {
  value: V;
  secretHash: string;
  expiresAt: number;
}

/**
 * Credentials verified by this process (API keys; sign-in sessions), so an authenticated request
 * costs no lookup. A revoked credential stops working on every process before the revocation
 * answers: the revoking transaction notifies every process's listener, each drops the credential
 * and answers, and the revocation waits for the answer of every listener session on the database.
 * One that does not answer within LISTENER_FRESH_MS has stopped trusting what it remembers by then
 * (`isFresh`), so the wait is bounded and nothing slips through.
 */
export function createCredentialCache<V>(listener: NotificationListener, channels: CredentialChannels) {
  const keys = new Map<string, Remembered<V>>();
  /** Changes whenever keys are dropped: a lookup that started before may have read a key now revoked. */
  let generation = 0;
  /** Key id -> listener sessions that dropped it, and when the first answered. */
  const answers = new Map<string, { pids: Set<number>; since: number }>();
  const onAnswer = new Set<() => void>();

  listener.on(channels.revoked, (keyId) => {
    generation++;
    keys.delete(keyId);
    listener.notify(channels.dropped, keyId);
  });
  listener.on(channels.dropped, (keyId, pid) => {
    const now = performance.now();
    for (const [id, answer] of answers) if (now - answer.since > ANSWER_KEPT_MS) answers.delete(id);
    const answer = answers.get(keyId) ?? { pids: new Set<number>(), since: now };
    answer.pids.add(pid);
    answers.set(keyId, answer);
    for (const wake of onAnswer) wake();
  });
  listener.onReset(() => {
    generation++;
    keys.clear();
  });

  const allDropped = (keyIds: string[], pids: number[]) => keyIds.every((id) => pids.every((pid) => answers.get(id)?.pids.has(pid)));

  return {
    /**
     * What this process verified about a credential and may still trust, else undefined (look it
     * up). `secretHash`: the hash of the secret presented, or '' for a credential proven otherwise
     * (an access token's signature).
     */
    lookup(keyId: string, secretHash: string): V | undefined {
      const known = keys.get(keyId);
      if (!known || !listener.isFresh() || known.expiresAt <= performance.now()) return undefined;
      return safeEqual(known.secretHash, secretHash) ? known.value : undefined;
    },

    /** Taken before a lookup and handed to `remember`: a key revoked while it ran is not kept. */
    generation: () => generation,

    remember(keyId: string, value: V, secretHash: string, lookupGeneration: number): void {
      if (lookupGeneration !== generation) return;
      if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
      keys.set(keyId, { value, secretHash, expiresAt: performance.now() + TTL_MS });
    },

    /** After the revoking transaction committed: returns once no process accepts `keyIds` any more. */
    async awaitDropped(keyIds: string[]): Promise<void> {
      if (keyIds.length === 0) return;
      generation++;
      for (const id of keyIds) keys.delete(id);
      const deadline = performance.now() + LISTENER_FRESH_MS;
      const pids = await listener.listenerPids();
      while (!allDropped(keyIds, pids) && performance.now() < deadline) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(wake, deadline - performance.now());
          function wake() {
            clearTimeout(timer);
            onAnswer.delete(wake);
            resolve();
          }
          onAnswer.add(wake);
        });
      }
      for (const id of keyIds) answers.delete(id);
    },
  };
}

export type CredentialCache<V> = ReturnType<typeof createCredentialCache<V>>;
