/**
 * A failed install keeps the old version, is reported to the authority (`event: failed` and why),
 * and is not asked about or fetched again before its back-off (1, 6, 24 hours, then only a newer
 * push).
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { pushOf, ScriptedPrompt, UpdateWorld, v1Content, v2Content } from '../support/updater-harness.js';

const HOUR = 3_600_000;
let world: UpdateWorld;
afterEach(() => world.close());

/** A launch of v1 whose user answers Install now, if asked. */
async function launchAndAnswer() {
  const prompt = new ScriptedPrompt(['install']);
  const outcome = await (await world.launch({ prompt })).checkInBackground();
  return { outcome, asked: prompt.offers.length > 0 };
}

const downloads = () => world.packages.ranges.length;

describe('a failed install', () => {
  it('is reported, keeps the old version running, and is not retried until its back-off is over; a newer push is tried at once', async () => {
    world = await new UpdateWorld({ app: 'notes', executable: true }).start();
    // The package served is not the one the manifest signs: every install of this push fails.
    world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)), { sha256: 'e'.repeat(64) });

    const first = await launchAndAnswer();
    expect(first.outcome).toMatchObject({ status: 'failed', code: 'PACKAGE_REJECTED' });
    expect(world.authority.updateReports).toMatchObject([{ event: 'failed', reason: 'package_rejected', build_id: 'bld_v2', version: '1.0.0' }]);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v1Content(true));
    expect(world.process.exits).toEqual([]);
    expect(world.process.spawned).toEqual([]);
    expect(downloads()).toBe(1);

    // Each wait: not asked and nothing fetched a moment before its end; asked, fetched and failed again at it.
    const t0 = world.clock.now().getTime();
    const at = (ms: number) => world.clock.advance(ms - world.clock.now().getTime());
    for (const [failures, hoursSinceStart] of [
      [1, 1],
      [2, 7],
      [3, 31],
    ] as const) {
      at(t0 + hoursSinceStart * HOUR - 1);
      const waiting = await launchAndAnswer();
      expect(waiting).toEqual({ outcome: expect.objectContaining({ status: 'backed-off', retryAt: new Date(t0 + hoursSinceStart * HOUR).toISOString() }), asked: false });
      expect(downloads()).toBe(failures);

      at(t0 + hoursSinceStart * HOUR);
      expect(await launchAndAnswer()).toEqual({ outcome: expect.objectContaining({ status: 'failed', code: 'PACKAGE_REJECTED' }), asked: true });
      expect(downloads()).toBe(failures + 1);
      expect(world.authority.updateReports).toHaveLength(failures + 1);
    }

    // After the fourth failure: never again for this push.
    world.clock.advance(1000 * HOUR);
    expect(await launchAndAnswer()).toEqual({ outcome: expect.objectContaining({ status: 'backed-off', retryAt: null }), asked: false });
    expect(downloads()).toBe(4);
    expect(world.authority.updateReports.every((r) => r.event === 'failed' && r.reason === 'package_rejected')).toBe(true);

    // A newer push of the build, served right: installed at once.
    world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)), { serial: 8 });
    expect((await launchAndAnswer()).outcome).toMatchObject({ status: 'restarting' });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
  });

  it('a download that fails is reported as download_failed', async () => {
    world = await new UpdateWorld({ app: 'notes', executable: true }).start();
    world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)));
    world.packages.failures.push(404);
    expect((await launchAndAnswer()).outcome).toMatchObject({ status: 'failed', code: 'DOWNLOAD_FAILED' });
    expect(world.authority.updateReports).toMatchObject([{ event: 'failed', reason: 'download_failed', build_id: 'bld_v2' }]);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v1Content(true));
  });
});
