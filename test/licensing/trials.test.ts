import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { DAY_MS, tenant, type Tenant } from './world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

async function trialTenant(trialsPerComputer?: number): Promise<Tenant> {
  return tenant(server, { plan: 'free', app: trialsPerComputer === undefined ? {} : { trials_per_computer: trialsPerComputer } });
}

const activate = (t: Tenant, licenseKey: string, device: string) =>
  t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: device, build_id: null } });
const getLicense = async (t: Tenant, id: string) => (await t.call('GET', `/v1/licenses/${id}`, { apiKey: t.dev.apiKey })).body;

describe('no-commitment trials', () => {
  it('start their 14 days at the first activation and end there, at activation and at refresh', async () => {
    const t = await trialTenant();
    const trial = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    expect(trial.expires_at).toBeNull();
    const clockBefore = server.clock.offsetMs;
    try {
      // Days pass before the app first runs: they do not count.
      server.clock.advance(5 * DAY_MS);
      const firstRun = server.clock.now().getTime();
      const device = randomFingerprint();
      const res = await activate(t, trial.license_key, device);
      expect(res.status).toBe(200);
      const started = await getLicense(t, trial.license_id);
      const expiresAt = new Date(started.expires_at).getTime();
      expect(expiresAt - firstRun).toBeGreaterThanOrEqual(14 * DAY_MS - 1000);
      expect(expiresAt - firstRun).toBeLessThan(14 * DAY_MS + 60_000);

      // A second machine on the same license shares the clock; it does not restart it.
      server.clock.advance(3 * DAY_MS);
      expect((await activate(t, trial.license_key, randomFingerprint())).status).toBe(200);
      expect((await getLicense(t, trial.license_id)).expires_at).toBe(started.expires_at);

      server.clock.advance(11 * DAY_MS + 60_000);
      const late = await activate(t, trial.license_key, device);
      expect(late.status).toBe(403);
      expect(late.body.error_code).toBe('LICENSE_EXPIRED');
      const refresh = await t.call('POST', '/v1/licenses/refresh', { body: { token: res.body.token } });
      expect(refresh.status).toBe(403);
      expect(refresh.body.error_code).toBe('LICENSE_EXPIRED');
      expect((await getLicense(t, trial.license_id)).status).toBe('EXPIRED');
    } finally {
      server.clock.offsetMs = clockBefore;
    }
  });

  it('allow each computer trials_per_computer trials of an app, whatever the license or email', async () => {
    const t = await trialTenant(1);
    const device = randomFingerprint();
    const first = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial', email: 'a@example.com' });
    const second = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial', email: 'b@example.com' });
    expect((await activate(t, first.license_key, device)).status).toBe(200);

    const again = await activate(t, second.license_key, device);
    expect(again.status).toBe(403);
    expect(again.body).toMatchObject({ error_code: 'TRIAL_ALREADY_USED', status_code: 403 });
    // Refused: the second trial's clock did not start and it recorded no device.
    const untouched = await getLicense(t, second.license_id);
    expect(untouched.expires_at).toBeNull();
    expect(untouched.devices).toEqual([]);

    // Another computer may still start the second trial; the first may re-activate its own.
    expect((await activate(t, second.license_key, randomFingerprint())).status).toBe(200);
    expect((await activate(t, first.license_key, device)).status).toBe(200);
  });

  it('count per app: the same computer may try another app', async () => {
    const t = await trialTenant(1);
    const otherApp = await t.call('POST', '/v1/apps', { token: t.dev.accessToken, body: { name: 'Other', platforms: ['linux-x64'] } });
    const device = randomFingerprint();
    const a = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    const b = await createLicense(t.call, t.dev, { app_id: otherApp.body.id, license_type: 'trial' });
    expect((await activate(t, a.license_key, device)).status).toBe(200);
    expect((await activate(t, b.license_key, device)).status).toBe(200);
  });

  it('count a computer whose fingerprint changed as the same computer, by its components; another machine gets its own trial', async () => {
    const t = await trialTenant(1);
    const machine = { 'os.machine_id': randomFingerprint(), 'system.uuid': randomFingerprint(), 'board.serial': randomFingerprint(), cpu: randomFingerprint() };
    const withComponents = (licenseKey: string, components: Record<string, string>) =>
      t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: randomFingerprint(), fingerprint_components: components, build_id: null } });
    const [first, second, third] = await Promise.all([1, 2, 3].map(() => createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' })));
    expect((await withComponents(first!.license_key, machine)).status).toBe(200);
    // The same computer read with a new fingerprint (run as root, a new disk): its trial is used.
    const changed = await withComponents(second!.license_key, { ...machine, cpu: randomFingerprint() });
    expect(changed.body).toMatchObject({ error_code: 'TRIAL_ALREADY_USED', status_code: 403 });
    // Another machine sharing two serials but not the machine id is another computer.
    expect((await withComponents(third!.license_key, { ...machine, 'os.machine_id': randomFingerprint() })).status).toBe(200);
  });

  it("never let a machine id sent alone spend another computer's trial", async () => {
    const t = await trialTenant(1);
    const victim = { 'os.machine_id': randomFingerprint(), 'system.uuid': randomFingerprint(), 'board.serial': randomFingerprint(), cpu: randomFingerprint() };
    const [attackers, victims] = await Promise.all([1, 2].map(() => createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' })));
    const activateWith = (licenseKey: string, components: Record<string, string>) =>
      t.call('POST', '/v1/licenses/activate', { body: { license_key: licenseKey, device_fingerprint: randomFingerprint(), fingerprint_components: components, build_id: null } });
    expect((await activateWith(attackers!.license_key, { 'os.machine_id': victim['os.machine_id'] })).status).toBe(200);
    expect((await activateWith(victims!.license_key, victim)).status).toBe(200);
  });

  it('serialise one computer activating two trials at once, with and without its components: one trial starts', async () => {
    const t = await trialTenant(1);
    const device = randomFingerprint();
    const machine = { 'os.machine_id': randomFingerprint(), 'system.uuid': randomFingerprint(), 'board.serial': randomFingerprint() };
    const [one, two] = await Promise.all([1, 2].map(() => createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' })));
    const answers = await Promise.all([
      t.call('POST', '/v1/licenses/activate', { body: { license_key: one!.license_key, device_fingerprint: device, fingerprint_components: machine, build_id: null } }),
      activate(t, two!.license_key, device),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 403]);
  });

  it('honour a higher trials_per_computer, and 0 allows none', async () => {
    const two = await trialTenant(2);
    const device = randomFingerprint();
    const keys = await Promise.all([1, 2, 3].map(() => createLicense(two.call, two.dev, { app_id: two.app.id, license_type: 'trial' })));
    expect((await activate(two, keys[0]!.license_key, device)).status).toBe(200);
    expect((await activate(two, keys[1]!.license_key, device)).status).toBe(200);
    expect((await activate(two, keys[2]!.license_key, device)).body.error_code).toBe('TRIAL_ALREADY_USED');

    const none = await trialTenant(0);
    const trial = await createLicense(none.call, none.dev, { app_id: none.app.id, license_type: 'trial' });
    expect((await activate(none, trial.license_key, randomFingerprint())).body.error_code).toBe('TRIAL_ALREADY_USED');
  });

  it('never grant a second trial through a device reset', async () => {
    const t = await trialTenant(1);
    const device = randomFingerprint();
    const first = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    const second = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    expect((await activate(t, first.license_key, device)).status).toBe(200);
    const started = (await getLicense(t, first.license_id)).expires_at;

    await t.call('POST', `/v1/licenses/${first.license_id}/reset-devices`, { apiKey: t.dev.apiKey });
    expect((await activate(t, second.license_key, device)).body.error_code).toBe('TRIAL_ALREADY_USED');
    // Back on its own trial, the clock keeps running from the first activation.
    expect((await activate(t, first.license_key, device)).status).toBe(200);
    expect((await getLicense(t, first.license_id)).expires_at).toBe(started);
  });

  it('hold when two trial licenses are activated on one computer at the same moment', async () => {
    const t = await trialTenant(1);
    const device = randomFingerprint();
    const licenses = await Promise.all(Array.from({ length: 6 }, () => createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' })));
    const results = await Promise.all(licenses.map((l) => activate(t, l.license_key, device)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.body.error_code === 'TRIAL_ALREADY_USED')).toHaveLength(5);
  });

  it('with a fixed expiry count as trials too, but their clock is the one given', async () => {
    const t = await trialTenant(1);
    const device = randomFingerprint();
    const fixed = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial', expiry_days: 30 });
    const open = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    expect((await activate(t, fixed.license_key, device)).status).toBe(200);
    expect((await getLicense(t, fixed.license_id)).expires_at).toBe(fixed.expires_at);
    expect((await activate(t, open.license_key, device)).body.error_code).toBe('TRIAL_ALREADY_USED');
  });
});

describe('a trial that ends while a new computer activates it', () => {
  it('gives that computer no slot, and says the license expired', async () => {
    const t = await trialTenant();
    const trial = await createLicense(t.call, t.dev, { app_id: t.app.id, license_type: 'trial' });
    // The license ends right after the activation's first statement read it usable: a trigger in
    // this file's own database expires it when that statement (or the trial's touch) updates
    // devices, once.
    await server.database.db.raw(
      `CREATE TABLE test_expire_on_update (license_id text PRIMARY KEY);
       CREATE FUNCTION test_expire_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           WITH planned AS (DELETE FROM test_expire_on_update RETURNING license_id)
           UPDATE licenses SET status = 'EXPIRED' FROM planned WHERE licenses.id = planned.license_id;
           RETURN NULL;
         END $$;
       CREATE TRIGGER test_expire_on_update AFTER UPDATE ON devices FOR EACH STATEMENT EXECUTE FUNCTION test_expire_on_update();`,
    );
    await server.database.db('test_expire_on_update').insert({ license_id: trial.license_id });
    const res = await activate(t, trial.license_key, randomFingerprint());
    expect(await server.database.db('test_expire_on_update').select('license_id')).toEqual([]);
    expect(res.status).toBe(403);
    expect(res.body.error_code).toBe('LICENSE_EXPIRED');
    expect((await getLicense(t, trial.license_id)).devices).toEqual([]);
  });
});
