import { afterAll, describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { runLatchkey } from '../support/cli.js';
import { createApp, createLicense, registerDeveloper, setPlan } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, readyBuild, shopState } from '../entitlements/support.js';

// docs/contract.md, License and Limits: the per-license download limit is adjustable (API, portal,
// CLI); a developer-set limit replaces the default allowance and does not add to it.
const server = await startTestServer();
afterAll(() => server.close());
const call = client(server.url);

async function developerWithLicense() {
  const dev = await registerDeveloper(call);
  await setPlan(call, server.adminToken, dev.id, 'pro');
  const app = await createApp(call, dev);
  const license = await createLicense(call, dev, { app_id: app.id });
  return { dev, app, license };
}

const setLimit = (dev: { apiKey: string }, licenseId: string, body: unknown) => call('PUT', `/v1/licenses/${licenseId}/download-limit`, { apiKey: dev.apiKey, body });

const limitOf = async (dev: { apiKey: string }, licenseId: string) => (await call('GET', `/v1/licenses/${licenseId}`, { apiKey: dev.apiKey })).body.download_limit;

describe('PUT /v1/licenses/{license_id}/download-limit', () => {
  it('[License] sets the download limit and puts it back to the default allowance with null', async () => {
    const { dev, license } = await developerWithLicense();
    const set = await setLimit(dev, license.license_id, { download_limit: 50 });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ license_id: license.license_id, license_key: license.license_key, download_limit: 50 });
    expect(await limitOf(dev, license.license_id)).toBe(50);
    expect((await setLimit(dev, license.license_id, { download_limit: null })).body.download_limit).toBeNull();
    expect(await limitOf(dev, license.license_id)).toBeNull();
  });

  it("[License] answers 404 for another developer's license and changes nothing", async () => {
    const owner = await developerWithLicense();
    const other = await registerDeveloper(call);
    expectError(await setLimit(other, owner.license.license_id, { download_limit: 99 }), 404, 'LICENSE_NOT_FOUND');
    expectError(await setLimit(other, 'lic_missing', { download_limit: 99 }), 404, 'LICENSE_NOT_FOUND');
    expect(await limitOf(owner.dev, owner.license.license_id)).toBeNull();
  });

  it('[License] refuses bad values with 400 and changes nothing', async () => {
    const { dev, license } = await developerWithLicense();
    await setLimit(dev, license.license_id, { download_limit: 7 });
    for (const body of [
      { download_limit: 0 },
      { download_limit: -1 },
      { download_limit: 2.5 },
      { download_limit: '10' },
      { download_limit: 1_000_001 },
      {},
      { download_limit: 10, extra: true },
    ]) {
      expectError(await setLimit(dev, license.license_id, body), 400, 'VALIDATION_FAILED');
    }
    expect(await limitOf(dev, license.license_id)).toBe(7);
  });

  it('[License] is documented in the OpenAPI document with its errors', async () => {
    const op = (await call('GET', '/v1/openapi.json')).body.paths['/v1/licenses/{license_id}/download-limit'].put;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404']));
  });

  it('[License] a developer-set limit replaces the default allowance and does not add to it', async () => {
    const m = await merchant(server, { platforms: ['linux-x64'], protection_level: 'none' });
    const build = await readyBuild(m, 'linux-x64');
    const b = brokerOf(m);
    const grant = await b.send(b.event());
    expect(grant.body.action).toBe('granted');
    const page = grant.body.delivery_url as string;
    const licenseId = (await shopState(m, b.shop)).row.license_id as string;
    // One build offered: the default allowance is 10.
    expect(await (await fetch(page)).text()).toContain('10 of 10 downloads left');

    expect((await setLimit(m.dev, licenseId, { download_limit: 12 })).status).toBe(200);
    expect(await (await fetch(page)).text()).toContain('12 of 12 downloads left');
    for (let i = 0; i < 12; i++) expect((await fetch(`${page}/builds/${build.id}`)).status, `download ${i + 1}`).toBe(200);
    expect((await fetch(`${page}/builds/${build.id}`)).status).toBe(403);

    // A lower one replaces it too; null gives the default back (10, of which 12 are used).
    expect((await setLimit(m.dev, licenseId, { download_limit: null })).status).toBe(200);
    expect(await (await fetch(page)).text()).toContain('All 10 downloads of this license are used');
  });
});

// Each case starts the real executable a few times: generous time, no timing asserted.
describe('latchkey licenses set-download-limit', { timeout: 120_000 }, () => {
  it('[License] sets and resets the download limit from the built CLI, and reports what it refuses', async () => {
    const { dev, license } = await developerWithLicense();
    const latchkey = (args: string[]) => runLatchkey(server.url, dev.apiKey, args);

    const set = await latchkey(['licenses', 'set-download-limit', '--license', license.license_id, '--limit', '25', '--json']);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ license_id: license.license_id, download_limit: 25 });
    expect(await limitOf(dev, license.license_id)).toBe(25);

    const human = await latchkey(['licenses', 'set-download-limit', '--license', license.license_id, '--default']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^download_limit\s+(null|—|-)?\s*$/m);
    expect(await limitOf(dev, license.license_id)).toBeNull();

    const neither = await latchkey(['licenses', 'set-download-limit', '--license', license.license_id]);
    expect(neither).toMatchObject({ code: 2, stderr: 'latchkey: give either --limit <n> or --default\n' });
    const zero = await latchkey(['licenses', 'set-download-limit', '--license', license.license_id, '--limit', '0']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('VALIDATION_FAILED');
    const missing = await latchkey(['licenses', 'set-download-limit', '--license', 'lic_missing', '--limit', '5']);
    expect(missing).toMatchObject({ code: 4, stderr: 'latchkey: No such license (LICENSE_NOT_FOUND)\n' });
    expect(await limitOf(dev, license.license_id)).toBeNull();
  });
});
