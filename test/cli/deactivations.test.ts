/**
 * Issue 22 item 1 in the CLI: `latchkey licenses deactivations` lists a license's deactivation
 * history (the app's own and the developer's resets), and `apps create --app-deactivations` sets
 * the quota the app's deactivations count against.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { runLatchkey } from '../support/cli.js';
import { startTestServer } from '../support/server.js';
import { tenant } from '../licensing/world.js';

const server = await startTestServer();
afterAll(() => server.close());
const t = await tenant(server);

const latchkey = (args: string[]) => runLatchkey(server.url, t.dev.apiKey, args);

async function activate(licenseKey: string): Promise<{ device: string; token: string }> {
  const device = randomFingerprint();
  const res = await t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: device } });
  expect(res.status).toBe(200);
  return { device, token: res.body.token as string };
}

// Each case starts the real executable a few times: generous time, no timing asserted.
describe('latchkey licenses deactivations', { timeout: 120_000 }, () => {
  it("lists the app's deactivations and the developer's resets, newest first, as a table and as JSON", async () => {
    const created = await latchkey(['apps', 'create', '--name', 'Movable', '--platform', 'linux-x64', '--app-deactivations', '5', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout);
    expect(app.app_deactivations_per_30_days).toBe(5);

    const license = await createLicense(t.call, t.dev, { app_id: app.id, device_limit: 2 });
    const byApp = await activate(license.license_key);
    const deactivated = await t.call('POST', '/v1/licenses/deactivate', { body: { token: byApp.token } });
    expect(deactivated.body).toMatchObject({ deactivated: true, deactivations_remaining: 4 });
    server.clock.advance(60_000);
    try {
      const byReset = await activate(license.license_key);
      expect((await latchkey(['licenses', 'reset-devices', '--license', license.license_id])).code).toBe(0);

      const table = await latchkey(['licenses', 'deactivations', '--license', license.license_id]);
      expect(table.code, table.stderr).toBe(0);
      const lines = table.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^DEACTIVATED AT\s+SOURCE\s+FINGERPRINT HASH$/);
      expect(lines[1]).toMatch(new RegExp(`^\\S+Z\\s+developer\\s+${byReset.device}$`));
      expect(lines[2]).toMatch(new RegExp(`^\\S+Z\\s+app\\s+${byApp.device}$`));
      expect(lines[3]).toBe('2 of 2 deactivation(s)');

      const json = await latchkey(['licenses', 'deactivations', '--license', license.license_id, '--limit', '1', '--json']);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual([{ fingerprint_hash: byReset.device, source: 'developer', deactivated_at: expect.any(String) }]);
    } finally {
      server.clock.advance(-60_000);
    }
  });

  it("exits 4 with the server's detail for a license that is not the developer's", async () => {
    const stranger = await tenant(server);
    const theirs = await createLicense(stranger.call, stranger.dev, { app_id: stranger.app.id });
    const res = await latchkey(['licenses', 'deactivations', '--license', theirs.license_id]);
    expect(res).toMatchObject({ code: 4, stdout: '', stderr: 'latchkey: No such license (LICENSE_NOT_FOUND)\n' });
    const missing = await latchkey(['licenses', 'deactivations']);
    expect(missing.code).toBe(2);
  });
});
