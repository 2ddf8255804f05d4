import type { Knex } from 'knex';
import type { BuildRow } from '../builds/store.js';
import type { Plan } from '../accounts/plan.js';
import type { Clock } from '../clock.js';
import { RequestError, assertThat } from '../errors.js';
import { awaitsSignedPackage } from '../builds/signed-package.js';
import { engineSupportsUpdates } from './engine-version.js';
import { isOlderBuild, pushConflict } from './rules.js';
import type { DeviceCounts, PushAppUpdateInput, PushLicenseUpdateInput } from './schemas.js';
import type { DeviceGroup, PushRead, PushScope, UpdatesStore } from './store.js';

/** An active push and where the devices it governs stand. */
export interface PushState {
  push: PushRead;
  devices: DeviceCounts;
}

/** A license's own push (null: none; the app push applies) and the app it belongs to. */
export interface LicensePushState {
  appId: string;
  state: PushState | null;
}

function tally(groups: DeviceGroup[]): DeviceCounts {
  const counts = { installed: 0, skipped: 0, failed: 0, pending: 0, unable: 0 };
  for (const group of groups) {
    if (group.state) {
      counts[group.state] += group.devices;
      continue;
    }
    counts.pending += group.devices;
    // A device that never reported its engine is merely pending: nothing says it cannot update.
    if (group.engine_version !== null && !engineSupportsUpdates(group.engine_version)) counts.unable += group.devices;
  }
  return counts;
}

function assertPro(plan: Plan): void {
  assertThat(plan === 'pro', 'PLAN_REQUIRED', 'Update pushes need a Pro subscription');
}

/**
 * docs/contract.md's push rules for developers: one active push per app, per-license pushes beside it, and
 * the adoption of each. Rules are checked in a fixed order and the first failure wins.
 */
export function createPushService(deps: { store: UpdatesStore; clock: Clock }) {
  const { store, clock } = deps;

  async function stateOf(scope: PushScope, push: PushRead): Promise<PushState> {
    return { push, devices: tally(await store.countDevices(scope, push.build_id, clock.now())) };
  }

  /** An app push governs the devices of the app's licenses that have no newer push of their own. */
  const appScope = (appId: string, push: PushRead): PushScope => ({ appId, serial: push.serial });

  /** The named READY build of the app, or the newest READY one (released, if `releasedOnly`). */
  async function chooseTarget(trx: Knex.Transaction, appId: string, buildId: string | undefined, releasedOnly: boolean): Promise<BuildRow> {
    if (buildId === undefined) {
      const newest = await store.findNewestReadyBuild(trx, appId, releasedOnly);
      assertThat(newest, 'NO_READY_BUILD', releasedOnly ? 'The app has no released READY build to push (delivery mode released_only)' : 'The app has no READY build to push');
      return newest;
    }
    const build = await store.findBuild(trx, appId, buildId);
    assertThat(build, 'BUILD_NOT_FOUND', 'No such build of this app');
    if (build.status !== 'READY') throw new RequestError('BUILD_NOT_READY', `Only a READY build can be pushed; this one is ${build.status}`);
    return build;
  }

  /** docs/contract.md Versioning 3: a Windows or macOS build is pushed only once its package is signed. */
  function assertSigned(build: BuildRow): void {
    if (!awaitsSignedPackage(build)) return;
    throw pushConflict(
      'build_not_signed',
      `Build ${build.id} (${build.platform}) carries no code signature: sign its package and upload it with Replace with Signed Package ` +
        `(PUT /v1/apps/${build.app_id}/builds/${build.id}/signed-package) before pushing it`,
    );
  }

  async function assertApp(developerId: string, appId: string): Promise<void> {
    assertThat(await store.findApp(developerId, appId), 'APP_NOT_FOUND', 'No such app');
  }

  async function findLicense(developerId: string, licenseId: string) {
    const license = await store.findLicense(developerId, licenseId, clock.now());
    assertThat(license, 'LICENSE_NOT_FOUND', 'No such license');
    return license;
  }

  return {
    /**
     * Rules in order: the app (404), Pro (403), the target (404, 409 BUILD_NOT_READY, 409
     * NO_READY_BUILD), signed if Windows or macOS (409 build_not_signed), released under released_only (409 build_not_released unless release_current),
     * not older than the active target (409 older_than_active_target), an active license (409
     * NO_ACTIVE_LICENSE). Then the push replaces the active one with a new serial.
     */
    async pushApp(developerId: string, appId: string, input: PushAppUpdateInput): Promise<PushState> {
      const now = clock.now();
      const push = await store.transaction(async (trx) => {
        const app = await store.lockApp(trx, developerId, appId);
        assertThat(app, 'APP_NOT_FOUND', 'No such app');
        assertPro(await store.planOf(trx, developerId, now));
        const releasedOnly = app.delivery_mode === 'released_only';
        const target = await chooseTarget(trx, appId, input.target_build_id, releasedOnly);
        assertSigned(target);
        const mustRelease = releasedOnly && !target.released;
        if (mustRelease && !input.release_current) {
          throw pushConflict('build_not_released', `Build ${target.id} is not released and the app delivers released builds only; release it, or send release_current: true`);
        }
        const active = await store.findAppPush(appId, trx);
        if (active && isOlderBuild(target, { id: active.build_id, created_at: active.build_created_at })) {
          throw pushConflict(
            'older_than_active_target',
            `Build ${target.id} is older than build ${active.build_id}, the target of the active push; clear the push first to push an older build`,
          );
        }
        assertThat(await store.hasActiveLicense(trx, appId, now), 'NO_ACTIVE_LICENSE', 'The app has no active license: nobody would receive the push');
        if (mustRelease) await store.releaseBuild(trx, target.id);
        return store.saveAppPush(trx, appId, { developer_id: developerId, build_id: target.id, release_notes: input.release_notes, pushed_at: now });
      });
      return stateOf(appScope(appId, push), push);
    },

    async getAppPush(developerId: string, appId: string): Promise<PushState | null> {
      await assertApp(developerId, appId);
      const push = await store.findAppPush(appId);
      return push ? stateOf(appScope(appId, push), push) : null;
    },

    /** Idempotent: an app without a push answers the same. Installed devices keep the new version; skippers stay where they are. */
    async clearAppPush(developerId: string, appId: string): Promise<void> {
      await assertApp(developerId, appId);
      await store.deleteAppPush(developerId, appId);
    },

    /**
     * Rules in order: the license (404), Pro (403), ACTIVE (409 NO_ACTIVE_LICENSE), the target (404,
     * 409 BUILD_NOT_READY, 409 NO_READY_BUILD), signed if Windows or macOS (409 build_not_signed). Any READY build of the app may be pushed, released
     * or not, older or newer (docs/contract.md push rule 7: a portal operation for one customer).
     */
    async pushLicense(developerId: string, licenseId: string, input: PushLicenseUpdateInput): Promise<LicensePushState> {
      const now = clock.now();
      const { appId, push } = await store.transaction(async (trx) => {
        const license = await store.lockLicense(trx, developerId, licenseId, now);
        assertThat(license, 'LICENSE_NOT_FOUND', 'No such license');
        assertPro(license.plan);
        assertThat(license.effective_status === 'ACTIVE', 'NO_ACTIVE_LICENSE', `The license is ${license.effective_status}; only active licenses receive pushes`);
        const target = await chooseTarget(trx, license.app_id, input.target_build_id, false);
        assertSigned(target);
        const saved = await store.saveLicensePush(trx, licenseId, { developer_id: developerId, build_id: target.id, release_notes: input.release_notes, pushed_at: now });
        return { appId: license.app_id, push: saved };
      });
      return { appId, state: await stateOf({ licenseId }, push) };
    },

    async getLicensePush(developerId: string, licenseId: string): Promise<LicensePushState> {
      const license = await findLicense(developerId, licenseId);
      const push = await store.findLicensePush(licenseId);
      return { appId: license.app_id, state: push ? await stateOf({ licenseId }, push) : null };
    },

    /** Idempotent, like clearing an app push; the app push (if any) applies to the license again. */
    async clearLicensePush(developerId: string, licenseId: string): Promise<void> {
      await findLicense(developerId, licenseId);
      await store.deleteLicensePush(developerId, licenseId);
    },
  };
}

export type PushService = ReturnType<typeof createPushService>;
