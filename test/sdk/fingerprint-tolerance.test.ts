/**
 * Issue 20 item 4: the fingerprint is read once per process and remembered with its components in
 * the sealed cache; a start inside grace matches by the component rule without the network or a
 * second probe, so a changed network card does not cost the license.
 */
import { describe, expect, it } from 'vitest';
import type { LicenseClient, LicenseClientOptions, LicenseStatus } from '../../runtime-sdk/index.js';
import { fakeAuthoritySuite } from './support/fake-authority-suite.js';
import { HOUR } from './support/fake-clock.js';
import { fakeMachine, tempDir, type FakeMachine } from './support/fake-machine.js';
import { clientOn } from './support/sdk-client.js';

const KEY = 'FPTL-2345-6789-ABCD';
const { clock, authority, open } = await fakeAuthoritySuite(KEY);

async function started(machine: FakeMachine, dir: string, overrides: Partial<LicenseClientOptions> = {}): Promise<LicenseClient> {
  const client = await clientOn(machine, authority, clock, dir, overrides);
  open.push(client);
  return client;
}

/** A virtual machine: no hardware serials, so its fingerprint includes the network card's MAC. */
const virtualMachine = (name: string, mac: string) =>
  fakeMachine(name, { 'system.uuid': undefined, 'system.serial': undefined, 'board.serial': undefined, 'disk.serial': undefined, 'net.primary_mac': mac });

/** Resolves once the machine's hardware has been read `count` times in all. */
async function probed(machine: FakeMachine, count: number): Promise<void> {
  while (machine.probeRuns() < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('fingerprint remembered with its components', () => {
  it('an offline start inside grace with changed MAC addresses still matches, without the network', async () => {
    const dir = tempDir();
    const activating = await started(virtualMachine('M1', '3c:22:fb:12:34:56'), dir);
    expect((await activating.activate(KEY)).state).toBe('valid');
    await activating.dispose();

    authority.down = true;
    clock.advance(30 * HOUR);
    const requestsBefore = authority.requests.length;
    // The same VM, its network card replaced: a new MAC.
    const moved = virtualMachine('M1', '52:54:00:ab:cd:ef');
    const client = await started(moved, dir);
    const changes: LicenseStatus[] = [];
    client.on('change', (status) => changes.push(status));
    expect(await client.check()).toMatchObject({ state: 'grace', usable: true });
    // The background check reads the hardware once and matches it by the component rule.
    await probed(moved, 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await client.check()).toMatchObject({ state: 'grace', usable: true });
    expect(changes).toEqual([]);
    await client.dispose();

    // And the next start is as good, still without the network.
    expect((await (await started(moved, dir)).check()).state).toBe('grace');
    expect(authority.requests.length).toBe(requestsBefore);
    clock.advance(-30 * HOUR);
  });

  it('other hardware with the same OS machine id does not match', async () => {
    const dir = tempDir();
    const activating = await started(fakeMachine('M2'), dir);
    expect((await activating.activate(KEY)).state).toBe('valid');
    await activating.dispose();
    // Same machine id (a cloned image), every hardware serial different.
    const clone = fakeMachine('N2', { 'os.machine_id': fakeMachine('M2').components['os.machine_id']! });
    const client = await started(clone, dir);
    const dropped = new Promise<LicenseStatus>((resolve) => client.on('change', resolve));
    expect((await client.check()).state).toBe('valid');
    expect(await dropped).toMatchObject({ state: 'unlicensed', reason: 'device_changed' });
  });

  it('the hardware probe runs once per process: activation, refreshes and a second client share it', async () => {
    const machine = fakeMachine('M3');
    const dir = tempDir();
    const first = await started(machine, dir);
    expect((await first.activate(KEY)).state).toBe('valid');
    expect((await first.refresh()).state).toBe('valid');
    await first.dispose();
    const second = await started(machine, dir, { refreshOnStart: true });
    expect((await second.refresh()).state).toBe('valid');
    expect((await second.activate(KEY)).state).toBe('valid');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(machine.probeRuns()).toBe(1);
  });

  it('an early background refresh keeps the remembered fingerprint: the next start needs no probe', async () => {
    const dir = tempDir();
    const activating = await started(fakeMachine('M4'), dir);
    expect((await activating.activate(KEY)).state).toBe('valid');
    await activating.dispose();

    // This run's probes overrun their time (a hung WMI): the fingerprint stays the remembered one, unverified.
    const slow = fakeMachine('M4', {}, { probesWaitFor: new Promise(() => {}) });
    const refreshing = await started(slow, dir, { refreshOnStart: true, fingerprintTimeoutMs: 20 });
    const refreshed = authority.requests.length + 1;
    while (authority.requests.length < refreshed) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await refreshing.dispose();

    // A start that had to probe would read the same hung hardware and not open the cache.
    const next = await started(fakeMachine('M4', {}, { probesWaitFor: new Promise(() => {}) }), dir, { fingerprintTimeoutMs: 20 });
    expect((await next.check()).state).toBe('valid');
  });
});
