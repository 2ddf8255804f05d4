import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { runLatchkey } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let dev: TestDeveloper;
beforeAll(async () => {
  server = await startTestServer();
  dev = await registerDeveloper(client(server.url));
});
afterAll(() => server.close());

const latchkey = (args: string[]) => runLatchkey(server.url, dev.apiKey, args);

// Each case starts the real executable a few times: generous time, no timing asserted.
describe('latchkey apps', { timeout: 120_000 }, () => {
  it('creates, lists and gets apps, as tables and as JSON', async () => {
    const created = await latchkey([
      'apps',
      'create',
      '--name',
      'Notes Pro',
      '--platform',
      'linux-x64,win-x64',
      '--platform',
      'mac-arm64',
      '--default-device-limit',
      '3',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout);
    expect(app).toMatchObject({
      id: expect.stringMatching(/^app_/),
      name: 'Notes Pro',
      platforms: ['linux-x64', 'win-x64', 'mac-arm64'],
      default_device_limit: 3,
      protection_level: 'standard',
    });

    const human = await latchkey(['apps', 'create', '--name', 'Sketch', '--platform', 'mac-x64', '--protection-level', 'none', '--delivery-mode', 'released_only']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^id\s+app_\w+$/m);
    expect(human.stdout).toMatch(/^platforms\s+\["mac-x64"\]$/m);
    expect(human.stdout).toMatch(/^protection_level\s+none$/m);
    expect(human.stdout).toMatch(/^delivery_mode\s+released_only$/m);

    const list = await latchkey(['apps', 'list']);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^APP ID\s+NAME\s+PLATFORMS\s+PROTECTION\s+DELIVERY\s+DEVICE LIMIT\s+CREATED AT$/);
    expect(lines[1]).toMatch(new RegExp(`^${app.id}\\s+Notes Pro\\s+linux-x64,win-x64,mac-arm64\\s+standard\\s+all\\s+3\\s+\\S+$`));
    expect(lines.at(-1)).toBe('2 of 2 app(s)');
    const page = await latchkey(['apps', 'list', '--limit', '1', '--offset', '1', '--json']);
    expect(JSON.parse(page.stdout).map((a: { name: string }) => a.name)).toEqual(['Sketch']);

    const got = await latchkey(['apps', 'get', '--app', app.id]);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(new RegExp(`^fingerprint_salt\\s+${app.fingerprint_salt}$`, 'm'));
    expect(JSON.parse((await latchkey(['apps', 'get', '--app', app.id, '--json'])).stdout)).toEqual(app);
  });

  it('sets what sales mint with create and update (--sold-seat-model and its seats), leaving other settings alone', async () => {
    const created = await latchkey(['apps', 'create', '--name', 'Floats', '--platform', 'linux-x64', '--sold-seat-model', 'floating', '--sold-max-concurrent', '5', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout);
    expect(app).toMatchObject({ sold_seat_model: 'floating', sold_max_concurrent: 5, sold_lease_ttl_minutes: 15 });

    const updated = await latchkey(['apps', 'update', '--app', app.id, '--sold-seat-model', 'floating', '--sold-max-concurrent', '8', '--sold-lease-ttl-minutes', '60']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toMatch(/^sold_max_concurrent\s+8$/m);
    const renamed = await latchkey(['apps', 'update', '--app', app.id, '--name', 'Floats 2', '--default-device-limit', '4', '--json']);
    expect(JSON.parse(renamed.stdout)).toMatchObject({
      name: 'Floats 2',
      default_device_limit: 4,
      sold_seat_model: 'floating',
      sold_max_concurrent: 8,
      sold_lease_ttl_minutes: 60,
    });

    const refused = await latchkey(['apps', 'update', '--app', app.id, '--sold-max-concurrent', '3']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('sold_seat_model');
    const back = await latchkey(['apps', 'update', '--app', app.id, '--sold-seat-model', 'node_locked', '--json']);
    expect(JSON.parse(back.stdout)).toMatchObject({ sold_seat_model: 'node_locked', sold_max_concurrent: null, sold_lease_ttl_minutes: null });
    const read = await client(server.url)('GET', `/v1/apps/${app.id}`, { apiKey: dev.apiKey });
    expect(read.body).toMatchObject({ name: 'Floats 2', sold_seat_model: 'node_locked' });
    expect((await latchkey(['apps', 'update', '--app', 'app_missing', '--name', 'X'])).code).toBe(4);
  });

  it('sets the meters sales mint with --sold-meter on create and update, shows them, and clears them with --no-sold-meters', async () => {
    const meterArgs = ['--sold-meter', 'export=100/month', '--sold-meter', 'render=5/lifetime'];
    const created = await latchkey(['apps', 'create', '--name', 'Meters', '--platform', 'linux-x64', ...meterArgs, '--json']);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout);
    expect(app.sold_meters).toEqual({ export: { uses_per_period: 100, period: 'month' }, render: { uses_per_period: 5, period: 'lifetime' } });

    const got = await latchkey(['apps', 'get', '--app', app.id]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(/^sold_meters\s+export=100\/month render=5\/lifetime$/m);
    const renamed = await latchkey(['apps', 'update', '--app', app.id, '--name', 'Meters 2', '--json']);
    expect(JSON.parse(renamed.stdout).sold_meters).toEqual(app.sold_meters);
    const replaced = await latchkey(['apps', 'update', '--app', app.id, '--sold-meter', 'export=7/day']);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toMatch(/^sold_meters\s+export=7\/day$/m);

    const bad = await latchkey(['apps', 'update', '--app', app.id, '--sold-meter', 'export=7/week']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('must be <feature>=<uses>/<period>');
    const both = await latchkey(['apps', 'update', '--app', app.id, '--sold-meter', 'export=1/day', '--no-sold-meters']);
    expect(both.code).toBe(2);
    const over = await latchkey(['apps', 'update', '--app', app.id, '--sold-meter', 'export=2000000000/day']);
    expect(over.code).toBe(2);
    expect(over.stderr).toContain('VALIDATION_FAILED');
    expect((await client(server.url)('GET', `/v1/apps/${app.id}`, { apiKey: dev.apiKey })).body.sold_meters).toEqual({ export: { uses_per_period: 7, period: 'day' } });

    const cleared = await latchkey(['apps', 'update', '--app', app.id, '--no-sold-meters']);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(cleared.stdout).toMatch(/^sold_meters\s+-$/m);
  });

  it('refuses what the API refuses, with its detail and the exit code of the kind of failure', async () => {
    const missing = await latchkey(['apps', 'get', '--app', 'app_missing']);
    expect(missing).toMatchObject({ code: 4, stdout: '', stderr: 'latchkey: No such app (APP_NOT_FOUND)\n' });
    // Under --json the API's error body is on stdout too, for scripts.
    const missingJson = await latchkey(['apps', 'get', '--app', 'app_missing', '--json']);
    expect(missingJson.code).toBe(4);
    expect(JSON.parse(missingJson.stdout)).toMatchObject({ error_code: 'APP_NOT_FOUND', status_code: 404 });

    const platform = await latchkey(['apps', 'create', '--name', 'X', '--platform', 'amiga']);
    expect(platform.code).toBe(2);
    expect(platform.stderr).toContain("argument 'amiga' is invalid. must be among win-x64, win-arm64, linux-x64, linux-arm64, mac-x64, mac-arm64");
    const invalid = await latchkey(['apps', 'create', '--name', 'X', '--platform', 'linux-x64', '--price-id', 'prod_123']);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/^latchkey: body\.price_id: must be a Price ID \(price_\.\.\.\), not a Product ID \(VALIDATION_FAILED\)\n$/);
    expect((await latchkey(['apps', 'create', '--platform', 'linux-x64'])).stderr).toContain("required option '--name <name>' not specified");
  });
});
