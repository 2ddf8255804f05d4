import { randomBytes, randomInt } from 'node:crypto';
import { defineBench, expectStatus, type RequestSpec } from './lib.js';
import { seedLicensedApp } from './seed.js';

/**
 * Activations spread over many licenses, as in the field: one license's slot count is one row,
 * locked until its activation commits. The authority admits 5 activations per 10 minutes per
 * license, so in the field a license never sees two at once; 2,000 licenses keep the bench's rate
 * per license (under one a second at its peak) far above that and still out of each other's way.
 */
const LICENSES = 2_000;
/** Far more than a run activates per license, so no activation meets the device limit. */
const DEVICE_LIMIT = 10_000;
/** Activated devices whose tokens the refresh case presents. */
const REFRESH_DEVICES = 200;

const pick = <T>(items: T[]): T => items[randomInt(items.length)]!;
const newFingerprint = () => randomBytes(32).toString('hex');

/**
 * Issue 3: activation of a new device (one statement: key lookup, velocity count, slot claim; then
 * the token signature) and refresh by token (signature check; one statement: license read, refresh
 * count, device touch; new signature); the baseline runs one statement and signs once. Then both at
 * half Latchkey's measured peak, evenly paced, for the latency an authority under ordinary load gives.
 */
export default defineBench({
  title: 'License activation and token refresh, against node:http doing the same statement with pg and one Ed25519 signature',
  async run(ctx) {
    const latchkey = await ctx.startLatchkey();
    const { call } = latchkey;
    const { keys } = await seedLicensedApp(latchkey, 'Bench Runtime App', LICENSES, (i) => ({
      email: `buyer${i}@example.com`,
      device_limit: DEVICE_LIMIT,
      license_type: 'perpetual',
    }));
    const tokens = await Promise.all(
      Array.from({ length: REFRESH_DEVICES }, async (_, i) => {
        const body = { license_key: keys[i % LICENSES], device_fingerprint: newFingerprint(), build_id: null };
        return expectStatus(await call('POST', '/v1/licenses/activate', { body }), 200, 'activate').body.token as string;
      }),
    );
    const baseline = await ctx.startBaseline('runtime');

    const cases: [string, RequestSpec][] = [
      [
        'activation (new device)',
        { method: 'POST', path: '/v1/licenses/activate', bodyPerRequest: () => ({ license_key: pick(keys), device_fingerprint: newFingerprint(), build_id: null }) },
      ],
      ['refresh (by token)', { method: 'POST', path: '/v1/licenses/refresh', bodyPerRequest: () => ({ token: pick(tokens) }) }],
    ];
    for (const [name, request] of cases) {
      await ctx.measureHotPath(name, [latchkey, baseline], request, 'runtime');
    }
  },
});
