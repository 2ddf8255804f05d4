/**
 * Issue 20 item 8: a cache re-sealed by another process of the same user, with a later last contact,
 * must not stretch offline grace. Grace runs from the signed token's issue time to its expiry.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LicenseClient } from '../../runtime-sdk/index.js';
import { fakeAuthoritySuite } from './support/fake-authority-suite.js';
import { resealCache } from './support/cache-reseal.js';
import { HOUR } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { clientOn, SALT } from './support/sdk-client.js';

const KEY = 'RSEL-2345-6789-ABCD';
const { clock, authority, open } = await fakeAuthoritySuite(KEY);

async function started(machine: ReturnType<typeof fakeMachine>, dir: string): Promise<LicenseClient> {
  const client = await clientOn(machine, authority, clock, dir);
  open.push(client);
  return client;
}

describe('a hand-resealed cache', () => {
  it.each([
    { name: 'a later last contact, with the skew and high-water mark to match', shift: 80 * HOUR, state: 'tampered', reason: 'cache_modified' },
    { name: 'a later last contact alone', shift: 80 * HOUR, state: 'tampered', reason: 'cache_modified', alone: true },
    // Within the skew an honest clock may have, the times agree: grace still ends at the signed expiry.
    { name: 'a last contact moved 20 h later, with a matching skew', shift: 20 * HOUR, state: 'expired', reason: 'grace_exhausted' },
  ])('$name does not extend grace ($state)', async ({ shift, state, reason, alone }) => {
    const machine = fakeMachine(`R${shift}${alone ? 'a' : ''}`);
    const dir = tempDir();
    const activating = await started(machine, dir);
    expect((await activating.activate(KEY)).state).toBe('valid');
    await activating.dispose();
    const fingerprintHash = JSON.parse(authority.requests.at(-1)!.body).device_fingerprint as string;

    // Offline past the 72 h of grace the token grants...
    authority.down = true;
    clock.advance(72 * HOUR + HOUR);
    const honest = await started(machine, dir);
    expect((await honest.check()).state).toBe('expired');
    await honest.dispose();

    // ...then the cache says the last contact was later.
    await resealCache(path.join(dir, 'license.cache'), { fingerprintHash, salt: SALT, appId: authority.appId }, (payload) => {
      const lastOnlineAt = (payload.lastOnlineAt as number) + shift;
      return alone ? { ...payload, lastOnlineAt } : { ...payload, lastOnlineAt, serverSkewMs: (payload.serverSkewMs as number) - shift, highWaterAt: clock.now().getTime() };
    });
    const status = await (await started(machine, dir)).check();
    expect(status).toMatchObject({ state, reason, usable: false });
    clock.advance(-(72 * HOUR + HOUR));
  });
});
