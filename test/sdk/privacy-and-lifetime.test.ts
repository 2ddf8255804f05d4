import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicenseClient, systemClock } from '../../runtime-sdk/index.js';
import { normalizeComponent } from '../../runtime-sdk/fingerprint/canonical.js';
import { hardwareProbes, importSystemInformation, readComponents } from '../../runtime-sdk/fingerprint/components.js';
import { hostPlatform } from '../../runtime-sdk/platform.js';
import { FINGERPRINT_PATTERN } from '../../runtime-sdk/protocol.js';
import { FakeAuthority } from './support/fake-authority.js';
import { FakeClock, HOUR } from './support/fake-clock.js';
import { tempDir } from './support/fake-machine.js';

const KEY = 'PRIV-ACY2-3456-789A';
let authority: FakeAuthority;
const clock = new FakeClock(Date.now());

beforeAll(async () => {
  authority = await new FakeAuthority(clock).start();
  authority.addLicense(KEY);
});
afterAll(() => authority.close());

/** Every form a raw identifier could take on the wire: as read, normalised, without separators. */
function rawForms(values: (string | undefined)[]): string[] {
  const forms = new Set<string>();
  for (const value of values) {
    const normalized = normalizeComponent(value);
    if (!normalized || normalized.length < 4) continue;
    forms.add(normalized);
    forms.add(normalized.replace(/[:\-. |]/g, ''));
    for (const part of normalized.split('|')) if (part.length >= 6) forms.add(part);
  }
  return [...forms];
}

describe('what leaves the process', () => {
  it('sends only the salted fingerprint hash: no raw hardware identifier in any request (real probes)', async () => {
    const { components } = await readComponents(await hardwareProbes(hostPlatform, importSystemInformation, () => {}), 10_000);
    const forms = rawForms([...Object.values(components), hostPlatform.cpuModel()]);
    expect(forms.length).toBeGreaterThan(2);

    const license = await createLicenseClient({
      appId: authority.appId,
      serverUrl: authority.url,
      publicKeys: authority.publicKeys,
      fingerprintSalt: 'salt-privacy',
      appVersion: '3.1.0',
      cacheDir: tempDir(),
      clock,
      refreshOnStart: false,
      // Other test files probe the same hardware in parallel; give the probes room.
      fingerprintTimeoutMs: 10_000,
    });
    try {
      await license.activate(KEY);
      await license.refresh();
      clock.advance(80 * HOUR); // past grace: the refresh goes by key and fingerprint
      authority.scripted.push({ status: 401, body: { detail: 'rotated', error_code: 'INVALID_RUNTIME_TOKEN', status_code: 401 } });
      await license.refresh();
    } finally {
      await license.dispose();
    }

    expect(authority.requests.length).toBe(4);
    for (const request of authority.requests) {
      const wire = `${request.path}\n${JSON.stringify(request.headers)}\n${request.body}`.toLowerCase();
      for (const form of forms) expect(wire, `request to ${request.path} leaks ${form}`).not.toContain(form.toLowerCase());
      const body = JSON.parse(request.body);
      if (body.device_fingerprint) expect(body.device_fingerprint).toMatch(FINGERPRINT_PATTERN);
    }
  });

  it('never keeps the app alive: an undisposed client with background refresh lets the process exit', async () => {
    const realTime = await new FakeAuthority(systemClock).start();
    realTime.addLicense(KEY);
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/sdk/support/undisposed-app.ts', realTime.url, JSON.stringify(realTime.publicKeys), tempDir(), KEY], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exitCode = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(null);
      }, 20_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    await realTime.close();
    expect(output.trim()).toBe('valid');
    expect(exitCode).toBe(0);
    // The refresh timer was live meanwhile (every 50 ms for 400 ms), yet did not hold the process.
    expect(realTime.requests.filter((r) => r.path === '/v1/licenses/refresh').length).toBeGreaterThanOrEqual(1);
  });
});
