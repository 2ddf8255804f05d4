import { afterAll, afterEach } from 'vitest';
import type { LicenseClient } from '../../../runtime-sdk/index.js';
import { FakeAuthority } from './fake-authority.js';
import { FakeClock } from './fake-clock.js';

/**
 * One stand-in authority for a test file, started at collection, holding a license of `key` with
 * room for every device the file makes; the clients a test pushes onto `open` are disposed after it,
 * and the authority is back up for the next test.
 */
export async function fakeAuthoritySuite(key: string): Promise<{ clock: FakeClock; authority: FakeAuthority; open: LicenseClient[] }> {
  const clock = new FakeClock();
  const authority = await new FakeAuthority(clock).start();
  authority.addLicense(key, { deviceLimit: 100 });
  const open: LicenseClient[] = [];
  afterAll(() => authority.close());
  afterEach(async () => {
    authority.down = false;
    await Promise.all(open.splice(0).map((c) => c.dispose()));
  });
  return { clock, authority, open };
}
