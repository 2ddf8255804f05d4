/**
 * Issue 22 item 2, the SDK's half: a floating license's seat is a lease the SDK checks out at
 * activation and at every start, renews with a heartbeat and checks in on dispose(); offline, the
 * app runs until the lease's end, not for the app's grace hours. The SDK against the real server
 * (Koa + PostgreSQL), both on the server's shiftable clock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLicenseClient, type LicenseClient, type LicenseClientOptions, type LicenseStatus } from '../../runtime-sdk/index.js';
import { createLicense } from '../support/fixtures.js';
import { fakeMachine, tempDir, type FakeMachine } from './support/fake-machine.js';
import { startRealAuthority } from './support/real-authority.js';

const MINUTE_MS = 60_000;
const TTL_MINUTES = 3;

const { server, call, dev, app, sdkOptions } = await startRealAuthority();
const base: Omit<LicenseClientOptions, 'cacheDir'> = { ...sdkOptions, clock: server.clock };
const clients: LicenseClient[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
});
afterEach(() => {
  server.clock.offsetMs = 0;
});

/** An installation on `machine` (a fresh cache folder unless given one). */
async function install(machine: FakeMachine, options: Partial<LicenseClientOptions> = {}): Promise<LicenseClient> {
  const license = await createLicenseClient({ ...base, cacheDir: tempDir(), platform: machine.platform, fingerprintProbes: machine.probes, ...options });
  clients.push(license);
  return license;
}

const floatingLicense = (seats: number) =>
  createLicense(call, dev, { app_id: app.id, seat_model: 'floating', max_concurrent: seats, lease_ttl_minutes: TTL_MINUTES }).then((l) => l.license_key);

/** Checks the status until `done` holds (a background heartbeat answered), for at most ten seconds. */
async function statusWhen(license: LicenseClient, done: (status: LicenseStatus) => boolean): Promise<LicenseStatus> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    const status = await license.check();
    if (done(status)) return status;
    await sleep(50);
  }
  throw new Error('the status never changed as expected');
}

describe('floating licenses in the SDK', () => {
  it('checks a seat out at activation, keeps it with heartbeats and checks it in on dispose for another computer', async () => {
    const key = await floatingLicense(1);
    // Heartbeats at a third of the TTL, never slower than refreshIntervalMs: here, within the test's time.
    const first = await install(fakeMachine('F1'), { refreshIntervalMs: 200 });
    const activated = await first.activate(key);
    expect(activated).toMatchObject({ state: 'valid', usable: true, policy: { seat_model: 'floating', lease_ttl_minutes: TTL_MINUTES, device_limit: 1 } });
    const firstLeaseEnd = activated.graceEndsAt!.getTime();

    server.clock.advance(2 * MINUTE_MS);
    await statusWhen(first, (s) => s.graceEndsAt!.getTime() > firstLeaseEnd);
    server.clock.advance(2 * MINUTE_MS);
    // Past the first lease's end: the heartbeat kept the seat.
    const second = await install(fakeMachine('F2'));
    await expect(second.activate(key)).rejects.toMatchObject({ code: 'NO_SEAT_AVAILABLE', retryable: true });

    await first.dispose();
    expect(await second.activate(key)).toMatchObject({ state: 'valid', usable: true });
  });

  it('checks the seat out again at the next start of an activated installation', async () => {
    const key = await floatingLicense(1);
    const machine = fakeMachine('F3');
    const cacheDir = tempDir();
    const first = await install(machine, { cacheDir });
    const cachedLeaseEnd = (await first.activate(key)).graceEndsAt!.getTime();
    await first.dispose();
    const other = await install(fakeMachine('F4'));
    await other.activate(key);
    await other.dispose();

    // The restart's check-out takes the seat the other computer checked in: its lease ends later
    // than the cached one (the clock moved on), which alone is valid at once, before any check-out.
    server.clock.advance(5_000);
    const restarted = await install(machine, { cacheDir });
    await statusWhen(restarted, (s) => s.state === 'valid' && s.graceEndsAt!.getTime() > cachedLeaseEnd);
    await expect((await install(fakeMachine('F5'))).activate(key)).rejects.toMatchObject({ code: 'NO_SEAT_AVAILABLE' });
  });

  it("runs offline until the lease's end, then stops; a seat taken meanwhile reads no_seat_available", async () => {
    const key = await floatingLicense(1);
    // No heartbeat within the test (a third of 3 minutes is a minute): as an app cut off from the network.
    const offline = await install(fakeMachine('F6'));
    // Grace ends a lease's life after the activation, which happened between these two readings.
    const before = server.clock.now().getTime();
    const status = await offline.activate(key);
    const after = server.clock.now().getTime();
    expect(status.graceEndsAt!.getTime()).toBeGreaterThan(before + TTL_MINUTES * MINUTE_MS - 2_000);
    expect(status.graceEndsAt!.getTime()).toBeLessThanOrEqual(after + TTL_MINUTES * MINUTE_MS);

    server.clock.advance(TTL_MINUTES * MINUTE_MS);
    expect(await offline.check()).toMatchObject({ state: 'expired', reason: 'grace_exhausted', usable: false });

    // Its lease expired with its grace: another computer takes the seat, and the first one learns so when back online.
    expect(await (await install(fakeMachine('F7'))).activate(key)).toMatchObject({ state: 'valid' });
    expect(await offline.refresh()).toMatchObject({ state: 'unlicensed', reason: 'no_seat_available', usable: false });
  });
});
