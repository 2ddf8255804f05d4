import { describe, expect, it } from 'vitest';
import { randomFingerprint } from '../support/fixtures.js';
import { serverWithTenant, tenant } from './world.js';
import { runLatchkey } from '../support/cli.js';

const { server, t } = await serverWithTenant();

const latchkey = (args: string[], env: Record<string, string> = {}) => runLatchkey(server.url, t.dev.apiKey, args, env);

// Each case starts the real executable several times: generous time, no timing asserted.
describe('latchkey licenses', { timeout: 120_000 }, () => {
  it('creates, lists, gets, resets and revokes, as tables and as JSON', async () => {
    const created = await latchkey(['licenses', 'create', '--app', t.app.id, '--email', 'buyer@example.com', '--device-limit', '3', '--json']);
    expect(created.code).toBe(0);
    const license = JSON.parse(created.stdout);
    expect(license).toMatchObject({ status: 'ACTIVE', device_limit: 3, email: 'buyer@example.com', license_key: expect.stringMatching(/^(\w{4}-){3}\w{4}$/) });

    const human = await latchkey(['licenses', 'create', '--app', t.app.id, '--type', 'trial', '--features', '{"tier":"basic"}']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^license_id\s+lic_/m);
    expect(human.stdout).toMatch(/^status\s+ACTIVE$/m);
    expect(human.stdout).toMatch(/^license_type\s+trial$/m);
    expect(human.stdout).toMatch(/^features\s+\{"tier":"basic"\}$/m);

    const device = randomFingerprint();
    await t.call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: device, platform: 'win-x64' } });

    const list = await latchkey(['licenses', 'list', '--app', t.app.id]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^LICENSE ID\s+LICENSE KEY\s+STATUS\s+TYPE\s+SEATS\s+EMAIL\s+EXPIRES AT$/);
    expect(lines[1]).toMatch(new RegExp(`^${license.license_id}\\s+${license.license_key}\\s+ACTIVE\\s+perpetual\\s+3 devices\\s+buyer@example.com`));
    expect(lines.at(-1)).toBe('2 of 2 license(s)');
    const listJson = await latchkey(['licenses', 'list', '--app', t.app.id, '--status', 'active', '--json']);
    expect(JSON.parse(listJson.stdout)).toHaveLength(2);

    const got = await latchkey(['licenses', 'get', '--license', license.license_id]);
    expect(got.code).toBe(0);
    expect(got.stdout).toContain('Devices (1)');
    expect(got.stdout).toMatch(new RegExp(`^${device}\\s+win-x64`, 'm'));

    const reset = await latchkey(['licenses', 'reset-devices', '--license', license.license_id]);
    expect(reset).toMatchObject({ code: 0, stdout: `Removed 1 device(s) from ${license.license_id}\n` });

    const revoked = await latchkey(['licenses', 'revoke', '--license', license.license_id, '--json']);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout).status).toBe('REVOKED');
  });

  it('creates a floating license with its seats and lease TTL', async () => {
    const created = await latchkey(['licenses', 'create', '--app', t.app.id, '--seat-model', 'floating', '--max-concurrent', '5', '--lease-ttl-minutes', '30', '--json']);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ seat_model: 'floating', max_concurrent: 5, lease_ttl_minutes: 30, device_limit: 5 });
    const human = await latchkey(['licenses', 'create', '--app', t.app.id, '--seat-model', 'floating', '--max-concurrent', '2']);
    expect(human.stdout).toMatch(/^seat_model\s+floating$/m);
    expect(human.stdout).toMatch(/^lease_ttl_minutes\s+15$/m);
    const refused = await latchkey(['licenses', 'create', '--app', t.app.id, '--seat-model', 'floating']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('max_concurrent');
  });

  it("sets a floating license's seats, shows them in the list, and refuses a node-locked license", async () => {
    const own = await tenant(server);
    const run = (args: string[]) => runLatchkey(server.url, own.dev.apiKey, args);
    const license = JSON.parse((await run(['licenses', 'create', '--app', own.app.id, '--seat-model', 'floating', '--max-concurrent', '2', '--json'])).stdout);
    const set = await run(['licenses', 'set-seats', '--license', license.license_id, '--max-concurrent', '4', '--lease-ttl-minutes', '45']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^max_concurrent\s+4$/m);
    const read = await own.call('GET', `/v1/licenses/${license.license_id}`, { apiKey: own.dev.apiKey });
    expect(read.body).toMatchObject({ seat_model: 'floating', max_concurrent: 4, lease_ttl_minutes: 45 });
    const ttlKept = await run(['licenses', 'set-seats', '--license', license.license_id, '--max-concurrent', '3', '--json']);
    expect(JSON.parse(ttlKept.stdout)).toMatchObject({ max_concurrent: 3, lease_ttl_minutes: 45 });

    const list = await run(['licenses', 'list']);
    expect(list.stdout.trim().split('\n')[1]).toMatch(new RegExp(`^${license.license_id}\\s+\\S+\\s+ACTIVE\\s+perpetual\\s+floating 3 seats\\s`));

    const nodeLocked = JSON.parse((await run(['licenses', 'create', '--app', own.app.id, '--json'])).stdout);
    const refused = await run(['licenses', 'set-seats', '--license', nodeLocked.license_id, '--max-concurrent', '2']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('LICENSE_NOT_FLOATING');
    const missingSeats = await run(['licenses', 'set-seats', '--license', license.license_id]);
    expect(missingSeats.code).not.toBe(0);
    expect((await own.call('GET', `/v1/licenses/${license.license_id}`, { apiKey: own.dev.apiKey })).body.max_concurrent).toBe(3);
  });

  it("exits with the code of the failure and the server's detail", async () => {
    const missing = await latchkey(['licenses', 'get', '--license', 'lic_000000000000000000000000']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toBe('latchkey: No such license (LICENSE_NOT_FOUND)\n');
    expect(missing.stdout).toBe('');

    const badKey = await latchkey(['licenses', 'list'], { LATCHKEY_API_KEY: 'lk_000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    expect(badKey.code).toBe(3);
    expect(badKey.stderr).toContain('The access token or API key is invalid or expired');
    expect(badKey.stderr).toContain('latchkey login');

    const invalid = await latchkey(['licenses', 'create', '--app', t.app.id, '--email', 'nope']);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/^latchkey: body\.email: .*\(VALIDATION_FAILED\)\n$/);
  });

  it('refuses bad arguments and a missing API key before calling the server', async () => {
    const noApp = await latchkey(['licenses', 'create']);
    expect(noApp.code).toBe(2);
    expect(noApp.stderr).toContain("required option '--app <app_id>' not specified");

    const badLimit = await latchkey(['licenses', 'create', '--app', t.app.id, '--device-limit', 'two']);
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toContain('must be a whole number');

    const noKey = await latchkey(['licenses', 'list'], { LATCHKEY_API_KEY: '' });
    expect(noKey).toMatchObject({ code: 3, stdout: '' });
    expect(noKey.stderr).toContain('not signed in: run `latchkey login --url <server>` or set LATCHKEY_API_KEY');

    const unreachable = await latchkey(['licenses', 'list'], { LATCHKEY_URL: 'http://127.0.0.1:1' });
    expect(unreachable.code).toBe(6);
    expect(unreachable.stderr).toContain('cannot reach http://127.0.0.1:1');
  });
});
