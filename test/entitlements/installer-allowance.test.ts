import { afterAll, describe, expect, it } from 'vitest';
import { ENGINE_VERSION } from '../../runtime-sdk/engine/version.js';
import { expectError } from '../support/assertions.js';
import { randomFingerprint } from '../support/fixtures.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, readyBuild, type Merchant } from './support.js';

// docs/contract.md, Limits: a store license's download allowance is shared by the hosted page and
// the installer (the update manifest's download).
const server = await startTestServer();
afterAll(() => server.close());

/** A store license whose app allows `limit` downloads, one Linux build pushed, and a device's manifest URL for it. */
async function storeWithPushedBuild(limit: number) {
  const m = await merchant(server, { platforms: ['linux-x64'], protection_level: 'none', download_limit: limit });
  const build = await readyBuild(m, 'linux-x64');
  const b = brokerOf(m);
  const grant = await b.send(b.event());
  expect(grant.body.action).toBe('granted');
  const fingerprint = randomFingerprint();
  const activation = { license_key: grant.body.license_key, device_fingerprint: fingerprint, build_id: null, platform: 'linux-x64', engine_version: ENGINE_VERSION };
  expect((await m.call('POST', '/v1/licenses/activate', { body: activation })).status).toBe(200);
  expect((await m.call('POST', `/v1/apps/${m.app.id}/push-update`, { token: m.dev.accessToken, body: {} })).status).toBe(200);
  return { m, build, page: `${grant.body.delivery_url as string}/builds/${build.id}`, installer: await manifestUrl(m, grant.body.license_key, fingerprint) };
}

async function manifestUrl(m: Merchant, licenseKey: string, fingerprint: string): Promise<string> {
  const res = await m.call('POST', '/v1/updates/check', { body: { license_key: licenseKey, device_fingerprint: fingerprint } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return JSON.parse(Buffer.from(res.body.manifest.split('.')[1], 'base64url').toString()).url;
}

const status = async (url: string) => {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status;
};

describe('[Limits] the download allowance is shared by the hosted page and the installer', () => {
  it("[Limits] counts the installer's downloads against the store's allowance", async () => {
    const s = await storeWithPushedBuild(2);
    expect(await status(s.page)).toBe(200);
    expect(await status(s.installer)).toBe(200);
    // Both used: the page and the installer are refused alike.
    expect(await status(s.page)).toBe(403);
    const refused = await fetch(s.installer);
    expectError({ status: refused.status, headers: refused.headers, body: await refused.json() }, 403, 'DOWNLOAD_LIMIT_REACHED');
    expect(await (await fetch(s.page.replace(/\/builds\/.*$/, ''))).text()).toContain('All 2 downloads of this license are used');
  });

  it('[Limits] two concurrent downloads at the last unit of allowance: exactly one succeeds', async () => {
    for (const pair of ['installer+installer', 'page+installer'] as const) {
      const s = await storeWithPushedBuild(1);
      const urls = pair === 'page+installer' ? [s.page, s.installer] : [s.installer, s.installer];
      const statuses = await Promise.all(urls.map(status));
      expect(statuses.sort(), pair).toEqual([200, 403]);
    }
  });

  it("[Limits] refuses an installer link for another license, and a plain build link's signature on it", async () => {
    const s = await storeWithPushedBuild(5);
    const url = new URL(s.installer);
    url.searchParams.set('license', 'lic_someone_else');
    const forged = await fetch(url);
    expect(forged.status).toBe(403);
    expect((await forged.json()).error_code).toBe('DOWNLOAD_LINK_INVALID');
    // A plain build link's signature does not pass for an installer link.
    const plain = (await s.m.call('GET', `/v1/apps/${s.m.app.id}/builds/${s.build.id}/download`, { token: s.m.dev.accessToken })).body.download_url as string;
    const swapped = new URL(s.installer);
    swapped.searchParams.set('signature', new URL(plain).searchParams.get('signature')!);
    swapped.searchParams.set('expires', new URL(plain).searchParams.get('expires')!);
    expect((await fetch(swapped)).status).toBe(403);
  });
});
