import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostPlatform } from '../../../runtime-sdk/platform.js';
import { createUpdater } from '../../../runtime-sdk/updates/index.js';
import { UpdateWorld } from '../support/updater-harness.js';

let world: UpdateWorld;
beforeAll(async () => {
  world = await new UpdateWorld().start();
});
afterAll(() => world.close());

describe('createUpdater', () => {
  it.each([
    ['no license client', { license: {} }, 'license'],
    ['a negative idle timeout', { downloadIdleTimeoutMs: -1 }, 'downloadIdleTimeoutMs'],
    ['a zero healthy delay', { healthyAfterMs: 0 }, 'healthyAfterMs'],
    ['a gui flag that is not a boolean', { gui: 'yes' }, 'gui'],
    ['an unknown Windows layout', { windowsLayout: 'two-folders' }, 'windowsLayout'],
  ])('refuses %s with INVALID_OPTIONS naming the option', async (_label, change, option) => {
    const license = await world.license();
    expect(() => createUpdater({ license, ...(change as object) })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringMatching(new RegExp(`^${option} `)) }),
    );
  });

  it('answers unavailable when the client holds no activation, without asking the authority', async () => {
    world.authority.requests.length = 0;
    const license = await world.license();
    await license.dispose();
    expect(await createUpdater({ license }).checkInBackground()).toEqual({ status: 'unavailable', reason: 'not_activated' });
    expect(world.authority.requests).toEqual([]);
  });
});

describe('the host process seam', () => {
  it('describes this process: a script run by node, its flags and the user arguments after the script', () => {
    const proc = hostPlatform.process;
    expect(proc).toMatchObject({ pid: process.pid, execPath: process.execPath, script: process.argv[1], args: process.argv.slice(2) });
    expect(proc.execArgv).toEqual(process.execArgv);
  });
});
