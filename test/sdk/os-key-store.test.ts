/**
 * Issue 20 item 8: the cache is bound to the OS store where there is one. No Secret Service runs
 * here, so `secret-tool` is a stand-in program on PATH that keeps secrets in a folder, speaking the
 * real tool's command line (lookup and store by attributes, the secret on stdin); the SDK runs it as
 * it would run the real one. Keychain (`security`) and DPAPI (PowerShell) cannot run on this machine.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LicenseClient } from '../../runtime-sdk/index.js';
import { FakeAuthority } from './support/fake-authority.js';
import { FakeClock } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { clientOn } from './support/sdk-client.js';

const KEY = 'OSKS-2345-6789-ABCD';
const clock = new FakeClock();
let authority: FakeAuthority;
const open: LicenseClient[] = [];
const secrets = tempDir('latchkey-secret-service-');
const bin = tempDir('latchkey-bin-');
const originalEnv = { PATH: process.env.PATH, DBUS_SESSION_BUS_ADDRESS: process.env.DBUS_SESSION_BUS_ADDRESS };

const FAKE_SECRET_TOOL = `#!/bin/sh
# secret-tool lookup ATTR VALUE... | secret-tool store --label=LABEL ATTR VALUE... (secret on stdin)
command="$1"; shift
# While this file exists, a lookup does not answer (the keyring slow to unlock, a D-Bus hiccup); storing still works.
[ -f "${secrets}/.unanswering" ] && [ "$command" = lookup ] && exit 1
[ "$command" = store ] && shift
key=$(printf '%s_' "$@" | tr -c 'A-Za-z0-9_.-' '_')
case "$command" in
  lookup) [ -f "${secrets}/$key" ] && cat "${secrets}/$key" || exit 1 ;;
  store) cat > "${secrets}/$key" ;;
  *) exit 2 ;;
esac
`;

beforeAll(async () => {
  authority = await new FakeAuthority(clock).start();
  authority.addLicense(KEY, { deviceLimit: 100 });
  fs.writeFileSync(path.join(bin, 'secret-tool'), FAKE_SECRET_TOOL, { mode: 0o700 });
});
afterAll(() => authority.close());
afterEach(async () => {
  authority.down = false;
  process.env.PATH = originalEnv.PATH;
  if (originalEnv.DBUS_SESSION_BUS_ADDRESS === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
  else process.env.DBUS_SESSION_BUS_ADDRESS = originalEnv.DBUS_SESSION_BUS_ADDRESS;
  await Promise.all(open.splice(0).map((c) => c.dispose()));
});

function withSecretService(): void {
  process.env.PATH = `${bin}${path.delimiter}${originalEnv.PATH}`;
  process.env.DBUS_SESSION_BUS_ADDRESS = 'unix:path=/run/user/1000/bus';
}

async function started(machine: ReturnType<typeof fakeMachine>, dir: string): Promise<LicenseClient> {
  const client = await clientOn(machine, authority, clock, dir, { osKeyStore: true });
  open.push(client);
  return client;
}

const envelopeOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'license.cache'), 'utf8')) as { binding?: { kind: string; store?: string } };

/** A machine with a Secret Service whose app activated once (and exited): its cache folder. */
async function activatedWithSecretService(name: string) {
  withSecretService();
  const machine = fakeMachine(name);
  const dir = tempDir();
  const activating = await started(machine, dir);
  expect((await activating.activate(KEY)).state).toBe('valid');
  await activating.dispose();
  return { machine, dir };
}

describe('cache bound to the OS key store', () => {
  it('with a Secret Service: the secret is kept there, the cache opens offline, and not once the secret is gone', async () => {
    const { machine, dir } = await activatedWithSecretService('K1');
    expect(envelopeOf(dir).binding).toEqual({ kind: 'os-store', store: 'secret-service' });
    const stored = fs.readdirSync(secrets);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toContain(authority.appId);

    authority.down = true;
    expect((await (await started(machine, dir)).check()).state).toBe('valid');

    // Another user's keyring (or a reset one): the same files and the same hardware do not open the cache.
    fs.rmSync(path.join(secrets, stored[0]!));
    const elsewhere = await started(machine, dir);
    expect(await elsewhere.check()).toMatchObject({ state: 'unlicensed', reason: 'foreign_cache' });
    // Activating there binds a new secret in this keyring, and that cache opens offline again.
    authority.down = false;
    expect((await elsewhere.activate(KEY)).state).toBe('valid');
    await elsewhere.dispose();
    expect(envelopeOf(dir).binding).toEqual({ kind: 'os-store', store: 'secret-service' });
    expect(fs.readdirSync(secrets)).toHaveLength(1);
    authority.down = true;
    expect((await (await started(machine, dir)).check()).state).toBe('valid');
  });

  it('a lookup that does not answer at one start costs that start only: its secret is not replaced, and the next start opens the cache', async () => {
    const { machine, dir } = await activatedWithSecretService('K3');
    const secretFiles = () => Object.fromEntries(fs.readdirSync(secrets).map((f) => [f, fs.readFileSync(path.join(secrets, f), 'utf8')]));
    const kept = secretFiles();
    const cache = fs.readFileSync(path.join(dir, 'license.cache'));

    authority.down = true;
    fs.writeFileSync(path.join(secrets, '.unanswering'), '');
    const unanswered = await started(machine, dir);
    expect(await unanswered.check()).toMatchObject({ state: 'unlicensed', usable: false });
    await unanswered.dispose();
    fs.rmSync(path.join(secrets, '.unanswering'));
    expect(secretFiles()).toEqual(kept);
    expect(fs.readFileSync(path.join(dir, 'license.cache')).equals(cache)).toBe(true);

    expect((await (await started(machine, dir)).check()).state).toBe('valid');
  });

  it('without one (no session bus, or no secret-tool): bound to the fingerprint and the installation', async () => {
    const machine = fakeMachine('K2');
    const dir = tempDir();
    const activating = await started(machine, dir);
    expect((await activating.activate(KEY)).state).toBe('valid');
    await activating.dispose();
    expect(envelopeOf(dir).binding).toMatchObject({ kind: 'install' });
    authority.down = true;
    expect((await (await started(machine, dir)).check()).state).toBe('valid');
  });
});
