import type { Knex } from 'knex';
import { RequestError, assertThat } from '../errors.js';
import type { UpdatesStore } from './store.js';

/** The `reason` of a 409 PUSH_CONFLICT: docs/contract.md's four, and ours for a target older than the active one. */
export const PUSH_CONFLICT_REASONS = ['build_not_released', 'active_push_target', 'push_target_not_released', 'build_not_signed', 'older_than_active_target'] as const;
export type PushConflictReason = (typeof PUSH_CONFLICT_REASONS)[number];

export const pushConflict = (reason: PushConflictReason, detail: string) => new RequestError('PUSH_CONFLICT', detail, { reason });

/** Whether build `a` was created before build `b` (ids break a tie, so two builds are never equal). */
export function isOlderBuild(a: { created_at: Date; id: string }, b: { created_at: Date; id: string }): boolean {
  const byTime = a.created_at.getTime() - b.created_at.getTime();
  return byTime !== 0 ? byTime < 0 : a.id < b.id;
}

/**
 * The push rules that other operations must respect, run inside their transaction. Each takes the
 * app's lock first, so it and a push of the same app never interleave: a push cannot land on a
 * build while it is being unreleased, nor on an unreleased build while the app switches to
 * released_only.
 */
export function createPushGuards(store: UpdatesStore) {
  async function lockedApp(trx: Knex.Transaction, developerId: string, appId: string) {
    const app = await store.lockApp(trx, developerId, appId);
    assertThat(app, 'APP_NOT_FOUND', 'No such app');
  }

  return {
    /** docs/contract.md push rule 3: the build of the active push stays released until the push is cleared or replaced. */
    async beforeUnrelease(trx: Knex.Transaction, developerId: string, appId: string, buildId: string): Promise<void> {
      await lockedApp(trx, developerId, appId);
      const active = await store.findAppPush(appId, trx);
      if (active?.build_id === buildId) {
        throw pushConflict('active_push_target', `Build ${buildId} is the target of the active push; clear the push or push another build first`);
      }
    },

    /**
     * docs/contract.md push rule 4: an app switching to released_only must not keep pushing an unreleased
     * build; with `releaseCurrent` that build is released in the same transaction.
     */
    async beforeReleasedOnly(trx: Knex.Transaction, developerId: string, appId: string, releaseCurrent: boolean): Promise<void> {
      await lockedApp(trx, developerId, appId);
      const active = await store.findAppPush(appId, trx);
      if (!active || active.released) return;
      if (!releaseCurrent) {
        throw pushConflict(
          'push_target_not_released',
          `The active push targets build ${active.build_id}, which is not released; send release_current: true to release it, or clear the push first`,
        );
      }
      await store.releaseBuild(trx, active.build_id);
    },
  };
}

export type PushGuards = ReturnType<typeof createPushGuards>;
