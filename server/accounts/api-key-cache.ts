import { performance } from 'node:perf_hooks';
import { safeEqual } from '../crypto/secrets.js';
import { LISTENER_FRESH_MS, type NotificationListener } from '../db/notification-listener.js';

/** Sent in the rotating transaction with each revoked key id; delivered to every process at commit. */
export const API_KEY_REVOKED_CHANNEL = 'latchkey_api_key_revoked';
/** Each process's answer once it dropped a revoked key: the key id, from its listener session. */
const API_KEY_DROPPED_CHANNEL = 'latchkey_api_key_dropped';

/** A remembered key is looked up again after this long, whatever else happens. */
const TTL_MS = 60_000;
const MAX_KEYS = 10_000;
/** Answers kept for a rotation that has not asked yet (a fast process can answer before it does). */
const ANSWER_KEPT_MS = 4 * LISTENER_FRESH_MS;

interface Remembered {
  developerId: string;
  secretHash: string;
  expiresAt: number;
}

/**
 * API keys verified by this process, so an authenticated request costs no lookup. A rotated key
 * stops working on every process before the rotation answers: the rotating transaction notifies
 * every process's listener, each drops the key and answers, and the rotation waits for the answer
 * of every listener session on the database. One that does not answer within LISTENER_FRESH_MS has
 * stopped trusting its keys by then (`isFresh`), so the wait is bounded and nothing slips through.
 */
export function createApiKeyCache(listener: NotificationListener) {
  const keys = new Map<string, Remembered>();
  /** Changes whenever keys are dropped: a lookup that started before may have read a key now revoked. */
  let generation = 0;
  /** Key id -> listener sessions that dropped it, and when the first answered. */
  const answers = new Map<string, { pids: Set<number>; since: number }>();
  const onAnswer = new Set<() => void>();

  listener.on(API_KEY_REVOKED_CHANNEL, (keyId) => {
    generation++;
    keys.delete(keyId);
    listener.notify(API_KEY_DROPPED_CHANNEL, keyId);
  });
  listener.on(API_KEY_DROPPED_CHANNEL, (keyId, pid) => {
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
    /** The developer of a key this process verified and may still trust, else undefined (look it up). */
    developerOf(keyId: string, secretHash: string): string | undefined {
      const known = keys.get(keyId);
      if (!known || !listener.isFresh() || known.expiresAt <= performance.now()) return undefined;
      return safeEqual(known.secretHash, secretHash) ? known.developerId : undefined;
    },

    /** Taken before a lookup and handed to `remember`: a key revoked while it ran is not kept. */
    generation: () => generation,

    remember(keyId: string, developerId: string, secretHash: string, lookupGeneration: number): void {
      if (lookupGeneration !== generation) return;
      if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
      keys.set(keyId, { developerId, secretHash, expiresAt: performance.now() + TTL_MS });
    },

    /** After the rotating transaction committed: returns once no process accepts `keyIds` any more. */
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

export type ApiKeyCache = ReturnType<typeof createApiKeyCache>;
