/**
 * Issue 22 item 4 in the CLI: `licenses create --meter`, `licenses set-meters` and `licenses usage`,
 * from the built executable against the real server.
 */
import { describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { runLatchkey } from '../support/cli.js';
import { serverWithTenant, tenant } from '../licensing/world.js';

const { server, t } = await serverWithTenant();

const latchkey = (args: string[]) => runLatchkey(server.url, t.dev.apiKey, args);

async function consume(licenseKey: string, feature: string, quantity: number): Promise<void> {
  const activated = await t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: randomFingerprint() } });
  expect(activated.status).toBe(200);
  const res = await t.call('POST', '/v1/licenses/consume', {
    body: { token: activated.body.token, feature, quantity, idempotency_key: `cli-${randomFingerprint().slice(0, 16)}` },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

// Each case starts the real executable a few times: generous time, no timing asserted.
describe('latchkey licenses: metered features', { timeout: 120_000 }, () => {
  it('creates a license with meters, shows their usage as a table and as JSON, and replaces them', async () => {
    const created = await latchkey(['licenses', 'create', '--app', t.app.id, '--meter', 'export=100/month', '--meter', 'render=5/lifetime', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const license = JSON.parse(created.stdout);
    expect(license.meters).toEqual({ export: { uses_per_period: 100, period: 'month' }, render: { uses_per_period: 5, period: 'lifetime' } });
    await consume(license.license_key, 'export', 7);

    const table = await latchkey(['licenses', 'usage', '--license', license.license_id]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^FEATURE\s+USED\s+REMAINING\s+PER PERIOD\s+PERIOD\s+PERIOD ENDS AT$/);
    expect(lines[1]).toMatch(/^export\s+7\s+93\s+100\s+month\s+\S+-01T00:00:00\.000Z$/);
    expect(lines[2]).toMatch(/^render\s+0\s+5\s+5\s+lifetime\s+never$/);

    const json = await latchkey(['licenses', 'usage', '--license', license.license_id, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).meters[0]).toMatchObject({ feature: 'export', used: 7, remaining: 93 });

    const set = await latchkey(['licenses', 'set-meters', '--license', license.license_id, '--meter', 'export=10/month', '--json']);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout).meters).toEqual([expect.objectContaining({ feature: 'export', uses_per_period: 10, used: 7, remaining: 3 })]);
    const none = await latchkey(['licenses', 'set-meters', '--license', license.license_id, '--none']);
    expect(none).toMatchObject({ code: 0, stdout: 'No metered features\n' });
  });

  it('refuses a malformed meter before any request, and a license that is not the developer’s with exit 4', async () => {
    for (const meter of ['export=100', 'export=100/week', 'export=-1/day', '=5/day']) {
      const res = await latchkey(['licenses', 'create', '--app', t.app.id, '--meter', meter]);
      expect(res.code, meter).toBe(2);
      expect(res.stderr).toMatch(/<feature>=<uses>\/<period>/);
    }
    expect((await latchkey(['licenses', 'set-meters', '--license', 'lic_x'])).code).toBe(2);
    const stranger = await tenant(server);
    const theirs = await createLicense(stranger.call, stranger.dev, { app_id: stranger.app.id });
    const res = await latchkey(['licenses', 'usage', '--license', theirs.license_id]);
    expect(res).toMatchObject({ code: 4, stdout: '', stderr: 'latchkey: No such license (LICENSE_NOT_FOUND)\n' });
  });
});
