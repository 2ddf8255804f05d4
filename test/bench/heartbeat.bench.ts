import { randomBytes, randomInt } from 'node:crypto';
import { defineBench, expectStatus, type Service } from './lib.js';
import { seedLicensedApp, seedMany } from './seed.js';

/** Issue 22: the heartbeats of 10,000 running copies, each holding a seat of a floating license. */
const LIVE_LEASES = 10_000;
/** Seats per license: a license's checkouts queue on its row lock, its heartbeats do not. */
const SEATS = 10;
const LICENSES = LIVE_LEASES / SEATS;

const newFingerprint = () => randomBytes(32).toString('hex');

/**
 * Issue 22 item 2: heartbeats of floating licenses (`POST /v1/licenses/refresh` by token: its
 * signature checked; one statement reads the license, counts the refresh, touches the device and
 * renews its live lease; a new token signed to the lease's end) at 10,000 live leases, against
 * node:http renewing the same lease row with one UPDATE and signing once. Both renew the same
 * seeded leases (15-minute TTL, far longer than the run) on one database.
 */
export default defineBench({
  title: 'Floating license heartbeats at 10,000 live leases, against node:http doing the lease UPDATE with pg and one Ed25519 signature',
  async run(ctx) {
    const services: Service[] = [];
    try {
      const latchkey = await ctx.startLatchkey();
      services.push(latchkey);
      const { call } = latchkey;
      const { keys } = await seedLicensedApp(latchkey, 'Bench Floating App', LICENSES, () => ({ seat_model: 'floating', max_concurrent: SEATS, lease_ttl_minutes: 15 }));
      const tokens = await seedMany(LIVE_LEASES, async (i) => {
        const body = { license_key: keys[i % LICENSES], device_fingerprint: newFingerprint(), build_id: null };
        return expectStatus(await call('POST', '/v1/licenses/activate', { body }), 200, 'check out a seat').body.token as string;
      });
      const baseline = await ctx.startBaseline('heartbeat');
      services.push(baseline);

      const request = { method: 'POST', path: '/v1/licenses/refresh', bodyPerRequest: () => ({ token: tokens[randomInt(tokens.length)] }) } as const;
      // A heartbeat is a token refresh: a runtime path, held to the same bar as the others.
      await ctx.measureHotPath('heartbeat (renew a live lease)', [latchkey, baseline], request, 'runtime');
    } finally {
      for (const service of services) await service.stop();
    }
  },
});
