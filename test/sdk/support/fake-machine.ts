import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Components, Probe } from '../../../runtime-sdk/fingerprint/index.js';
import type { Platform } from '../../../runtime-sdk/platform.js';
import { fakeProcess } from './fake-process.js';

/** A pretend computer: its raw identifiers, the probes that report them and a platform seam. */
export interface FakeMachine {
  components: Components;
  probes: Probe[];
  platform: Platform;
  /** How many times the hardware was probed (cold starts). */
  probeRuns: () => number;
}

export function fakeMachine(name: string, overrides: Components = {}, options: { probesWaitFor?: Promise<void> } = {}): FakeMachine {
  const components: Components = {
    'system.uuid': `4c4c4544-0042-${name}-8035-b4c04f564d32`,
    'board.serial': `BRD-${name}-7781`,
    'disk.serial': `S3Z9NB0K${name}123`,
    cpu: 'intel|core i7-9750h|6|158|10',
    'os.machine_id': `machine-${name}-6a1f0c2e9b`,
    'net.primary_mac': '3c:22:fb:12:34:56',
    ...overrides,
  };
  let runs = 0;
  const platform: Platform = {
    name: 'linux',
    arch: 'x64',
    appDataDir: () => {
      throw new Error('tests always pass cacheDir');
    },
    machineId: async () => components['os.machine_id'],
    cpuModel: () => 'Intel(R) Core(TM) i7-9750H',
    process: fakeProcess(),
  };
  return {
    components,
    probes: [
      async () => {
        runs++;
        await options.probesWaitFor;
        return { ...components };
      },
    ],
    platform,
    probeRuns: () => runs,
  };
}

export function tempDir(prefix = 'latchkey-sdk-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
