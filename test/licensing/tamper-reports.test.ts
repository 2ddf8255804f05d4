import { afterAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { readyBuild } from '../updates/support.js';
import { tenant } from './world.js';

const server = await startTestServer();
afterAll(() => server.close());

describe('POST /v1/licenses/tamper-report', () => {
  it("counts a device's reports once an hour, however many it sends; each device and each hour counts", async () => {
    // The windows are clock hours: a burst that straddled one would count twice.
    const left = 3_600_000 - (server.clock.now().getTime() % 3_600_000);
    if (left < 20_000) await new Promise((resolve) => setTimeout(resolve, left + 500));
    const t = await tenant(server);
    const build = await readyBuild({ server, call: t.call, dev: t.dev, app: t.app });
    const license = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 2 });
    const tokenOf = async () =>
      (await t.call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: randomFingerprint(), build_id: null } })).body.token as string;
    const [first, second] = [await tokenOf(), await tokenOf()];
    const report = (token: string, kind = 'integrity') => t.call('POST', '/v1/licenses/tamper-report', { body: { token, build_id: build.id, kind } });
    const counted = async () => (await t.call('GET', `/v1/licenses/${license.license_id}`, { apiKey: t.dev.apiKey })).body.tamper_reports as number;

    // A burst from one device, of both kinds: one incident.
    const answers = await Promise.all([...Array.from({ length: 10 }, () => report(first)), report(first, 'vault')]);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 204));
    expect(await counted()).toBe(1);
    expect((await report(second)).status).toBe(204);
    expect(await counted()).toBe(2);

    const offsetBefore = server.clock.offsetMs;
    try {
      server.clock.advance(3_600_000);
      expect((await report(first)).status).toBe(204);
      expect(await counted()).toBe(3);
    } finally {
      server.clock.offsetMs = offsetBefore;
    }
  });
});
