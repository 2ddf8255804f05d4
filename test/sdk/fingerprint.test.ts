import { describe, expect, it } from 'vitest';
import { canonicalize, fingerprintHash, normalizeComponent, selectComponents } from '../../runtime-sdk/fingerprint/canonical.js';
import { computeFingerprint, type Components } from '../../runtime-sdk/fingerprint/index.js';
import { hostPlatform } from '../../runtime-sdk/platform.js';
import { FINGERPRINT_PATTERN } from '../../runtime-sdk/protocol.js';

const SALT_A = 'salt-app-a-3f9c';
const SALT_B = 'salt-app-b-71d0';

const fixed = (components: Components) => [async () => components];
const fingerprintOf = (components: Components, salt = SALT_A) => computeFingerprint({ salt, platform: hostPlatform, timeoutMs: 1000, probes: fixed(components) });

const laptop: Components = {
  'system.uuid': '4C4C4544-0042-3510-8035-B4C04F564D32',
  'board.serial': '/7X9K2M3/CNWS200A1B/',
  'disk.serial': 'S3Z9NB0K123456',
  cpu: 'Intel|Core i7-9750H|6|158|10',
  'os.machine_id': '3d1219c7c4c5404aaa1f6d2a48adfda4',
  'net.primary_mac': '3c:22:fb:12:34:56',
};

describe('device fingerprint', () => {
  it('is stable on this machine across runs (real probes, container fallback) and shaped as the authority expects', async () => {
    const first = await computeFingerprint({ salt: SALT_A, platform: hostPlatform, timeoutMs: 5000 });
    const second = await computeFingerprint({ salt: SALT_A, platform: hostPlatform, timeoutMs: 5000 });
    expect(first.hash).toMatch(FINGERPRINT_PATTERN);
    expect(first.complete).toBe(true);
    expect(second.hash).toBe(first.hash);
  });

  it('hashes with HMAC-SHA-256 keyed by the salt: the RFC 4231 vector, and a fingerprint an earlier SDK computed', () => {
    // Devices already activated must keep their fingerprint whatever computes the HMAC.
    expect(fingerprintHash('what do ya want for nothing?', 'Jefe')).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    expect(fingerprintHash('latchkey-fingerprint/v1\ncpu=genuineintel|core i7|6|158|10\nos.machine_id=3f1c2e', 'app-salt-é')).toBe(
      'ea144dbbcdf8e3c62a922d663ee5ae8bdfafd52d523b3066bc08568f8e66fb0a',
    );
  });

  it('separates apps: the same machine gives unrelated hashes under different salts', async () => {
    const a = await fingerprintOf(laptop, SALT_A);
    const b = await fingerprintOf(laptop, SALT_B);
    expect(a.hash).not.toBe(b.hash);
    expect(a.hash).toMatch(FINGERPRINT_PATTERN);
    const real = await computeFingerprint({ salt: SALT_B, platform: hostPlatform, timeoutMs: 5000 });
    expect(real.hash).not.toBe((await computeFingerprint({ salt: SALT_A, platform: hostPlatform, timeoutMs: 5000 })).hash);
  });

  it('does not depend on case, spacing or probe order, and differs between machines', async () => {
    const shuffled: Components = Object.fromEntries(
      Object.entries(laptop)
        .reverse()
        .map(([k, v]) => [k, `  ${v!.toUpperCase()} `]),
    );
    expect((await fingerprintOf(shuffled)).hash).toBe((await fingerprintOf(laptop)).hash);
    expect((await fingerprintOf({ ...laptop, 'system.uuid': '4C4C4544-0042-3510-8035-B4C04F564D33' })).hash).not.toBe((await fingerprintOf(laptop)).hash);
  });

  it('leaves the network card out when hardware ids exist (Wi-Fi, docks), and uses it in VMs and containers', () => {
    const canonical = (components: Components) => canonicalize(selectComponents(components));
    expect(canonical(laptop)).not.toContain('net.primary_mac');
    expect(canonical({ ...laptop, 'net.primary_mac': 'aa:bb:cc:dd:ee:ff' })).toBe(canonical(laptop));
    const container: Components = {
      'system.uuid': '',
      'system.serial': '-',
      'board.serial': 'Default string',
      cpu: laptop.cpu,
      'os.machine_id': laptop['os.machine_id'],
      'net.primary_mac': '02:fc:00:00:00:01',
    };
    expect(canonical(container)).toBe(
      ['latchkey-fingerprint/v1', `cpu=${laptop.cpu!.toLowerCase()}`, 'net.primary_mac=02:fc:00:00:00:01', `os.machine_id=${laptop['os.machine_id']}`].join('\n'),
    );
  });

  it.each([
    '',
    '   ',
    '-',
    'None',
    'To Be Filled By O.E.M.',
    '00000000-0000-0000-0000-000000000000',
    'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
    '03000200-0400-0500-0006-000700080009',
  ])('ignores the firmware placeholder %j', (placeholder) => expect(normalizeComponent(placeholder)).toBeUndefined());

  it('bounds slow probes in time and says the reading is incomplete', async () => {
    const hung = () => new Promise<Components>(() => {});
    const failing = async (): Promise<Components> => {
      throw new Error('WMI unavailable');
    };
    // The hung probe never settles: only the time bound lets this call return.
    const result = await computeFingerprint({ salt: SALT_A, platform: hostPlatform, timeoutMs: 100, probes: [...fixed(laptop), hung, failing] });
    expect(result.complete).toBe(false);
    expect(result.hash).toBe(fingerprintHash(canonicalize(selectComponents(laptop)), SALT_A));
  });

  it('keeps to the component set of the activation: ids readable later change nothing, missing ones are flagged', async () => {
    const container: Components = { cpu: laptop.cpu, 'os.machine_id': laptop['os.machine_id'], 'net.primary_mac': '02:fc:00:00:00:01' };
    const activated = await fingerprintOf(container);
    expect(activated.components).toEqual(['cpu', 'net.primary_mac', 'os.machine_id']);
    // Run as root later: DMI ids appear; without the set the MAC would drop out and the hash change.
    const asRoot = { ...container, 'system.uuid': laptop['system.uuid'] };
    expect((await fingerprintOf(asRoot)).hash).not.toBe(activated.hash);
    const sameSet = await computeFingerprint({ salt: SALT_A, platform: hostPlatform, timeoutMs: 1000, probes: fixed(asRoot), only: activated.components });
    expect(sameSet).toEqual(activated);
    const missing = await computeFingerprint({ salt: SALT_A, platform: hostPlatform, timeoutMs: 1000, probes: fixed({ cpu: laptop.cpu }), only: activated.components });
    expect(missing.complete).toBe(false);
  });
});
