import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LicenseError, type LicenseClient, type LicenseStatus } from '../../runtime-sdk/index.js';
import { FakeAuthority } from './support/fake-authority.js';
import { FakeClock, HOUR } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { clientOn } from './support/sdk-client.js';
import { eventually } from '../support/wait.js';

const KEY = 'LMNP-QRST-UVWX-YZ23';
const clock = new FakeClock();
const machine = fakeMachine('D1');
let authority: FakeAuthority;
let dir: string;
const clients: LicenseClient[] = [];

beforeAll(async () => {
  authority = await new FakeAuthority(clock).start();
});
afterAll(() => authority.close());
beforeEach(() => {
  authority.licenses.clear();
  authority.addLicense(KEY);
  authority.down = false;
  dir = tempDir();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
});

async function start(overrides: Parameters<typeof clientOn>[4] = {}): Promise<LicenseClient> {
  const client = await clientOn(machine, authority, clock, dir, overrides);
  clients.push(client);
  return client;
}

async function refreshError(client: LicenseClient): Promise<LicenseError> {
  const err = await client.refresh().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LicenseError);
  return err as LicenseError;
}

const lastBody = () => JSON.parse(authority.requests.at(-1)!.body);

describe('offline grace', () => {
  it('keeps working offline for the grace period, refuses after it, recovers online', async () => {
    const client = await start();
    await client.activate(KEY);
    authority.down = true;

    clock.advance(3 * HOUR);
    expect(await refreshError(client)).toMatchObject({ code: 'OFFLINE', retryable: true });
    expect(await client.check()).toMatchObject({ state: 'grace', reason: 'offline', usable: true, features: { tier: 'pro' } });

    clock.advance(68 * HOUR);
    const restarted = await start();
    expect(await restarted.check()).toMatchObject({ state: 'grace', usable: true });

    clock.advance(HOUR);
    expect(await restarted.check()).toMatchObject({ state: 'expired', reason: 'grace_exhausted', usable: false, features: {} });

    authority.down = false;
    expect(await restarted.refresh()).toMatchObject({ state: 'valid', usable: true });
    expect(lastBody()).toEqual({ token: expect.any(String), build_id: null, device_key: expect.stringMatching(/^[\w-]{43}$/), app_version: '1.4.2', platform: 'linux-x64' });
  });
});

describe('authority verdicts at refresh', () => {
  it('sees a revocation at the next refresh, keeps it across an offline restart, and recovers on reactivation', async () => {
    const client = await start();
    await client.activate(KEY);
    authority.licenses.get(KEY)!.status = 'REVOKED';
    expect(await client.refresh()).toMatchObject({ state: 'revoked', reason: 'revoked_by_vendor', usable: false });

    authority.down = true;
    expect(await (await start()).check()).toMatchObject({ state: 'revoked', reason: 'revoked_by_vendor' });

    authority.down = false;
    authority.licenses.get(KEY)!.status = 'ACTIVE';
    expect(await (await start()).refresh()).toMatchObject({ state: 'valid' });
  });

  it('an expired license and a device reset are verdicts too', async () => {
    const client = await start();
    await client.activate(KEY);
    authority.licenses.get(KEY)!.status = 'EXPIRED';
    expect(await client.refresh()).toMatchObject({ state: 'expired', reason: 'license_expired' });
    authority.licenses.get(KEY)!.status = 'ACTIVE';
    authority.licenses.get(KEY)!.devices.clear();
    expect(await client.refresh()).toMatchObject({ state: 'unlicensed', reason: 'device_deactivated' });
    expect(await client.activate(KEY)).toMatchObject({ state: 'valid' });
  });

  it('falls back to the license key when the authority no longer recognises the token (key rotation)', async () => {
    const client = await start();
    await client.activate(KEY);
    authority.requests.length = 0;
    const rotated = await new FakeAuthority(clock).start();
    try {
      authority.scripted.push({ status: 401, body: { detail: 'unknown token', error_code: 'INVALID_RUNTIME_TOKEN', status_code: 401 } });
      expect(await client.refresh()).toMatchObject({ state: 'valid' });
      expect(authority.requests.map((r) => Object.keys(JSON.parse(r.body)).sort())).toEqual([
        ['app_version', 'build_id', 'device_key', 'platform', 'token'],
        ['app_version', 'build_id', 'device_fingerprint', 'device_key', 'fingerprint_components', 'license_key', 'platform'],
      ]);
    } finally {
      await rotated.close();
    }
  });
});

describe('clock tampering', () => {
  it('a clock set back past the high-water mark is tampered until the authority answers, which the client asks at once and at each start', async () => {
    const client = await start();
    await client.activate(KEY);
    clock.advance(10 * HOUR);
    expect((await client.check()).state).toBe('grace');

    authority.down = true;
    clock.advance(-6 * HOUR);
    expect(await client.check()).toMatchObject({ state: 'tampered', reason: 'clock_rollback', usable: false, graceEndsAt: null });
    clock.advance(6 * HOUR);
    expect((await client.check()).state).toBe('tampered');
    expect((await (await start()).check()).state).toBe('tampered');

    // Online again: the next start asks the authority at once (a clock corrected after running ahead
    // is not locked out until the hourly refresh), and its answer ends it; the app called nothing.
    authority.down = false;
    const restarted = await start();
    await eventually('the start-up refresh to end the rollback', async () => (await restarted.check()).state === 'valid');
    expect((await (await start()).check()).state).toBe('valid');
  });

  it('a rollback seen while running is asked about at once, not at the next hourly refresh', async () => {
    const client = await start();
    await client.activate(KEY);
    clock.advance(10 * HOUR);
    await client.check();
    const refreshes = () => authority.requests.filter((r) => r.path === '/v1/licenses/refresh').length;
    const before = refreshes();
    clock.advance(-6 * HOUR);
    expect((await client.check()).reason).toBe('clock_rollback');
    await eventually('the refresh the rollback asked for', async () => refreshes() > before);
    await eventually('its answer to end the rollback', async () => (await client.check()).state === 'valid');
  });

  it('the time an app ran counts even if it never checked: its exit raises the high-water mark, so setting the clock back after it is caught', async () => {
    const client = await start();
    await client.activate(KEY);
    authority.down = true;
    // Five hours of work offline, no check() after the start.
    clock.advance(5 * HOUR);
    await client.dispose();
    clock.advance(-4 * HOUR);
    expect(await (await start()).check()).toMatchObject({ state: 'tampered', reason: 'clock_rollback' });
  });

  it('small backwards steps (NTP) are tolerated', async () => {
    const client = await start();
    await client.activate(KEY);
    clock.advance(HOUR);
    await client.check();
    clock.advance(-4 * 60_000);
    expect((await client.check()).state).toBe('valid');
  });
});

describe('events and background refresh', () => {
  it('emits a change on each state transition; a throwing listener does not break licensing', async () => {
    const client = await start();
    const seen: string[] = [];
    client.on('change', () => {
      throw new Error('app bug');
    });
    const off = client.on('change', (status: LicenseStatus, previous: LicenseStatus) => seen.push(`${previous.state}->${status.state}`));
    await client.activate(KEY);
    clock.advance(3 * HOUR);
    await client.check();
    await client.check();
    clock.advance(70 * HOUR);
    await client.check();
    off();
    clock.advance(-100 * HOUR);
    await client.check();
    expect(seen).toEqual(['unlicensed->valid', 'valid->grace', 'grace->expired']);
  });

  it('a revocation is seen by the background refresh without any call from the app', async () => {
    await (await start()).activate(KEY);
    authority.licenses.get(KEY)!.status = 'REVOKED';
    const client = await start({ refreshOnStart: true });
    const revoked = new Promise<LicenseStatus>((resolve) => client.on('change', resolve));
    expect(await revoked).toMatchObject({ state: 'revoked' });
  });

  it('reports background refreshes that find the authority unreachable, and keeps the license on grace', async () => {
    const client = await start({ refreshIntervalMs: 60_000, offlineBackoffMs: 20 });
    await client.activate(KEY);
    authority.down = true;
    const failed = new Promise<string>((resolve) => client.on('refresh-failed', (err) => resolve(err.code)));
    await client.refresh().catch(() => undefined); // fails too, and schedules the backed-off retry
    expect(await failed).toBe('OFFLINE');
    expect((await client.check()).usable).toBe(true);
  });

  it('after dispose the client refuses calls', async () => {
    const client = await start();
    await client.activate(KEY);
    await client.dispose();
    await expect(client.check()).rejects.toMatchObject({ code: 'DISPOSED' });
  });
});
