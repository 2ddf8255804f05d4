import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Components } from '../../runtime-sdk/fingerprint/index.js';
import type { LicenseClient, LicenseStatus } from '../../runtime-sdk/index.js';
import { fakeAuthoritySuite } from './support/fake-authority-suite.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { clientOn, SALT } from './support/sdk-client.js';

const KEY = 'ABCD-EFGH-JKLM-NPQR';
const { clock, authority, open } = await fakeAuthoritySuite(KEY);

async function track(client: Promise<LicenseClient>): Promise<LicenseClient> {
  const c = await client;
  open.push(c);
  return c;
}

/** Activates machine `name` in a fresh cache folder; returns the folder and the machine. */
async function activatedCache(name: string) {
  const machine = fakeMachine(name);
  const dir = tempDir();
  const client = await track(clientOn(machine, authority, clock, dir));
  expect((await client.activate(KEY)).state).toBe('valid');
  await client.dispose();
  return { dir, machine, file: path.join(dir, 'license.cache') };
}

function copyCache(file: string): string {
  const dir = tempDir();
  fs.copyFileSync(file, path.join(dir, 'license.cache'));
  return dir;
}

describe('encrypted on-disk license cache', () => {
  it('starts licensed offline from the cache, with nothing readable in the file', async () => {
    const { dir, machine, file } = await activatedCache('A1');
    const text = fs.readFileSync(file, 'utf8');
    const fingerprint = JSON.parse(authority.requests.at(-1)!.body).device_fingerprint as string;
    expect(authority.issuedTokens.length).toBeGreaterThan(0);
    // The tokens themselves, not 'eyJ' (a JSON header in base64), which random ciphertext holds about once in a hundred runs.
    for (const secret of [KEY, ...authority.issuedTokens, fingerprint, machine.components['os.machine_id']!, authority.licenses.get(KEY)!.id]) expect(text).not.toContain(secret);
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');

    authority.down = true;
    try {
      const status = await (await track(clientOn(machine, authority, clock, dir))).check();
      expect(status).toMatchObject({ state: 'valid', usable: true, features: { tier: 'pro' }, licenseType: 'perpetual' });
    } finally {
      authority.down = false;
    }
  });

  it('is useless on another machine: a copied cache reads as unlicensed', async () => {
    const { file } = await activatedCache('A2');
    const otherMachine = fakeMachine('B2');
    const status = await (await track(clientOn(otherMachine, authority, clock, copyCache(file)))).check();
    expect(status).toMatchObject({ state: 'unlicensed', reason: 'foreign_cache', usable: false, features: {}, licenseId: null });
  });

  it('is useless to another app on the same machine (other salt)', async () => {
    const { file, machine } = await activatedCache('A3');
    const status = await (await track(clientOn(machine, authority, clock, copyCache(file), { fingerprintSalt: `${SALT}-other` }))).check();
    expect(status.state).toBe('unlicensed');
  });

  it('warm start: the remembered fingerprint answers without waiting for the hardware probes', async () => {
    const { dir } = await activatedCache('A4');
    let hardwareAnswers = () => {};
    const stuckMachine = fakeMachine('A4', {}, { probesWaitFor: new Promise((resolve) => (hardwareAnswers = resolve)) });
    // The probes cannot answer until the end: a start that waited for them would never get here.
    const client = await track(clientOn(stuckMachine, authority, clock, dir));
    expect((await client.check()).state).toBe('valid');
    hardwareAnswers();
  });

  it('a cold start remembers the fingerprint, written after its answer: the next start needs no probe', async () => {
    const { file, machine, dir } = await activatedCache('A8');
    const { memo: _memo, ...envelope } = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.writeFileSync(file, JSON.stringify(envelope));
    const cold = await track(clientOn(machine, authority, clock, dir));
    expect((await cold.check()).state).toBe('valid');
    await cold.dispose(); // waits for the queued write
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).memo).toEqual(expect.any(String));
    let hardwareAnswers = () => {};
    const stuckMachine = fakeMachine('A8', {}, { probesWaitFor: new Promise((resolve) => (hardwareAnswers = resolve)) });
    const warm = await track(clientOn(stuckMachine, authority, clock, dir));
    expect((await warm.check()).state).toBe('valid');
    hardwareAnswers();
  });

  it('a cloned OS id on other hardware passes the warm start, then the background probe drops the cache', async () => {
    const { file, machine } = await activatedCache('A5');
    const clone = fakeMachine('B5', { 'os.machine_id': machine.components['os.machine_id']! });
    const dir = copyCache(file);
    const client = await track(clientOn(clone, authority, clock, dir));
    const changed = new Promise<LicenseStatus>((resolve) => client.on('change', resolve));
    expect((await client.check()).state).toBe('valid');
    expect(await changed).toMatchObject({ state: 'unlicensed', reason: 'device_changed' });
    expect(fs.existsSync(path.join(dir, 'license.cache'))).toBe(false);
  });

  it.each([
    [
      'a flipped byte in the sealed body',
      (text: string) => {
        const envelope = JSON.parse(text);
        const body = Buffer.from(envelope.body, 'base64');
        body[body.length - 20]! ^= 0x01;
        return JSON.stringify({ ...envelope, body: body.toString('base64') });
      },
    ],
    ['a truncated file', (text: string) => text.slice(0, text.length / 2)],
    ['a body replaced by other bytes', (text: string) => JSON.stringify({ ...JSON.parse(text), body: Buffer.alloc(80, 7).toString('base64') })],
  ])('an edited cache (%s) reads as tampered', async (_label, edit) => {
    const { file, machine, dir } = await activatedCache(`A6${_label.length}`);
    fs.writeFileSync(file, edit(fs.readFileSync(file, 'utf8')));
    const client = await track(clientOn(machine, authority, clock, dir));
    expect(await client.check()).toMatchObject({ state: 'tampered', reason: 'cache_modified', usable: false });
    // A new activation replaces the damaged cache.
    expect((await client.activate(KEY)).state).toBe('valid');
  });

  it('moves the secrets into sodium memory right after start, or stays masked when told to', async () => {
    const { machine, dir } = await activatedCache('A7');
    const client = await track(clientOn(machine, authority, clock, dir));
    expect((await client.check()).memoryProtection).toBe('masked');
    await new Promise((resolve) => setImmediate(resolve));
    expect(await client.check()).toMatchObject({ memoryProtection: 'sodium', state: 'valid' });
    // The moved secrets still work: the cache key seals, the token refreshes.
    expect((await client.refresh()).state).toBe('valid');
    expect((await (await track(clientOn(machine, authority, clock, dir))).check()).state).toBe('valid');

    const masked = await track(clientOn(machine, authority, clock, dir, { memoryProtection: 'masked' }));
    await new Promise((resolve) => setImmediate(resolve));
    expect((await masked.check()).memoryProtection).toBe('masked');
  });
});

describe('hardware probes that overrun their time', () => {
  /** The machine, with its disk serial read by a probe that hangs for its first `hangs` calls. */
  function slowAtFirst(name: string, hangs: number) {
    const machine = fakeMachine(name);
    const { 'disk.serial': diskSerial, ...rest } = machine.components;
    let calls = 0;
    const disk = () => (++calls <= hangs ? new Promise<Components>(() => {}) : Promise.resolve({ 'disk.serial': diskSerial }));
    return { ...machine, probes: [async () => ({ ...rest }), disk] };
  }

  it('an incomplete reading at a cold start does not lose the license: the re-probe reads the cache again', async () => {
    const { file, dir } = await activatedCache('E1');
    const envelope = JSON.parse(fs.readFileSync(file, 'utf8'));
    delete envelope.memo; // a cold start: the hardware must be probed
    fs.writeFileSync(file, JSON.stringify(envelope));
    const client = await track(clientOn(slowAtFirst('E1', 1), authority, clock, dir, { fingerprintTimeoutMs: 50 }));
    const recovered = new Promise<LicenseStatus>((resolve) => client.on('change', resolve));
    expect((await client.check()).state).toBe('unlicensed');
    expect(await recovered).toMatchObject({ state: 'valid' });
  });

  it('a license activated on an incomplete reading stays with it when later readings are complete', async () => {
    const machine = slowAtFirst('E2', 2);
    const dir = tempDir();
    const first = await track(clientOn(machine, authority, clock, dir, { fingerprintTimeoutMs: 50 }));
    expect((await first.activate(KEY)).state).toBe('valid');
    await first.dispose();
    // Complete readings from now on: a cold start (memo removed) and a warm one both keep the license.
    const file = path.join(dir, 'license.cache');
    const envelope = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(envelope.components).not.toContain('disk.serial');
    fs.writeFileSync(file, JSON.stringify({ ...envelope, memo: undefined }));
    const cold = await track(clientOn(machine, authority, clock, dir));
    expect((await cold.check()).state).toBe('valid');
    await cold.dispose();
    const warm = await track(clientOn(machine, authority, clock, dir));
    const changes: string[] = [];
    warm.on('change', (status) => changes.push(status.state));
    expect((await warm.refresh()).state).toBe('valid');
    expect(changes).toEqual([]);
  });
});
