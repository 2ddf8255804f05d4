/**
 * Issue 20 item 9: every call the SDK makes honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their
 * lower-case forms), through a real proxy on 127.0.0.1. https goes through a CONNECT tunnel (the
 * app runs in a child process with its real environment, trusting the authority's certificate
 * through NODE_EXTRA_CA_CERTS); http is forwarded by absolute URL.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { systemClock, type LicenseClient } from '../../runtime-sdk/index.js';
import { downloadPackage } from '../../runtime-sdk/updates/download.js';
import { ConnectProxy } from './support/connect-proxy.js';
import { FakeAuthority } from './support/fake-authority.js';
import { FakeClock } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { fakeProcess } from './support/fake-process.js';
import { PackageServer } from './support/package-server.js';
import { runNetworkApp, startNetworkApp } from './support/network-app-process.js';
import { clientOn } from './support/sdk-client.js';
import { TlsFront } from './support/tls-front.js';

const KEY = 'PRXY-2345-6789-ABCD';
let authority: FakeAuthority;
let front: TlsFront;
let proxy: ConnectProxy;

beforeAll(async () => {
  authority = await new FakeAuthority(systemClock).start();
  front = await new TlsFront(authority.url).start();
  proxy = await new ConnectProxy().start();
});
afterAll(async () => {
  await front.close();
  await proxy.close();
  await authority.close();
});
beforeEach(() => {
  authority.licenses.clear();
  authority.addLicense(KEY, { deviceLimit: 10 });
  authority.requests.length = 0;
  proxy.requests.length = 0;
  proxy.credentials = undefined;
});

describe('https through HTTPS_PROXY (CONNECT), an app in its own process', () => {
  const options = () => ({
    appId: authority.appId,
    serverUrl: front.url,
    publicKeys: authority.publicKeys,
    fingerprintSalt: 'salt-proxy',
    appVersion: '1.0.0',
    cacheDir: tempDir(),
    memoryProtection: 'masked',
    retryLimit: 0,
  });
  const tunnelTo = () => ({ method: 'CONNECT', target: new URL(front.url).host });
  const trust = () => ({ NODE_EXTRA_CA_CERTS: front.certificateFile });

  it('tunnels activation and refresh through the proxy, and NO_PROXY sends them direct', async () => {
    const app = options();
    expect(await runNetworkApp({ action: 'activate', options: app, key: KEY }, { ...trust(), HTTPS_PROXY: proxy.url })).toMatch(/^valid$/m);
    expect(proxy.requests).toEqual([expect.objectContaining(tunnelTo())]);
    expect(authority.requests.map((r) => r.path)).toEqual(['/v1/licenses/activate']);

    expect(await runNetworkApp({ action: 'refresh', options: app }, { ...trust(), HTTPS_PROXY: proxy.url, NO_PROXY: 'localhost, 127.0.0.1' })).toMatch(/^valid$/m);
    expect(proxy.requests).toHaveLength(1);
    expect(authority.requests.map((r) => r.path)).toEqual(['/v1/licenses/activate', '/v1/licenses/refresh']);
  });

  it('reads the lower-case variables too', async () => {
    const app = options();
    expect(await runNetworkApp({ action: 'activate', options: app, key: KEY }, { ...trust(), https_proxy: proxy.url })).toMatch(/^valid$/m);
    expect(proxy.requests).toEqual([expect.objectContaining(tunnelTo())]);

    expect(await runNetworkApp({ action: 'refresh', options: app }, { ...trust(), https_proxy: proxy.url, no_proxy: '127.0.0.1' })).toMatch(/^valid$/m);
    expect(proxy.requests).toHaveLength(1);
  });

  it('sends the credentials in the proxy URL to the proxy, and never prints them', async () => {
    const withCredentials = proxy.urlWithCredentials('ana', 'pr0xy-s3cret');
    const output = await runNetworkApp({ action: 'activate', options: options(), key: KEY }, { ...trust(), HTTPS_PROXY: withCredentials });
    expect(output).toMatch(/^valid$/m);
    expect(proxy.requests[0]).toMatchObject({ ...tunnelTo(), proxyAuthorization: `Basic ${Buffer.from('ana:pr0xy-s3cret').toString('base64')}` });

    // Refused by the proxy (wrong password): the error names the proxy, not what was sent to it.
    const refused = startNetworkApp({ action: 'activate', options: options(), key: KEY }, { ...trust(), HTTPS_PROXY: withCredentials.replace('s3cret', 'wr0ng') });
    expect(await refused.exit(20_000)).toMatchObject({ code: 1 });
    expect(refused.output()).toContain('407');
    expect(refused.output()).toContain(proxy.url);
    expect(refused.output()).not.toContain('wr0ng');
    expect(refused.output()).not.toContain('ana:');
  });
  it('gives up on a proxy that takes the connection and never answers CONNECT: the call times out and the app exits', async () => {
    const silent = net.createServer(() => undefined);
    const port = await new Promise<number>((resolve) => silent.listen(0, '127.0.0.1', () => resolve((silent.address() as net.AddressInfo).port)));
    try {
      const app = startNetworkApp({ action: 'activate', options: { ...options(), requestTimeoutMs: 1000 }, key: KEY }, { ...trust(), HTTPS_PROXY: `http://127.0.0.1:${port}` });
      // It used to wait for the proxy for good, the app held open by the call.
      expect(await app.exit(20_000)).toMatchObject({ code: 1 });
      expect(app.output()).toContain('ETIMEDOUT');
      expect(authority.requests).toEqual([]);
    } finally {
      silent.close();
    }
  });
});

describe('http through HTTP_PROXY (absolute URL), the environment through the platform seam', () => {
  const KEY_HTTP = 'HTTP-2345-6789-ABCD';
  const clients: LicenseClient[] = [];
  const start = (env: Record<string, string>) => {
    const machine = fakeMachine('PX1');
    const platform = { ...machine.platform, process: fakeProcess({ env }) };
    return clientOn({ ...machine, platform }, authority, new FakeClock(Date.now()), tempDir()).then((c) => (clients.push(c), c));
  };
  afterAll(() => Promise.all(clients.map((c) => c.dispose())));

  it('forwards every authority call (activation, refresh, update check) through the proxy', async () => {
    authority.addLicense(KEY_HTTP);
    const license = await start({ HTTP_PROXY: proxy.url });
    await license.activate(KEY_HTTP);
    await license.refresh();
    await license.updateChannel().check({ build_id: null, version: '1.0.0', platform: 'linux-x64', engine_version: null } as never);
    expect(proxy.requests.map((r) => `${r.method} ${r.target}`)).toEqual([
      `POST ${authority.url}/v1/licenses/activate`,
      `POST ${authority.url}/v1/licenses/refresh`,
      `POST ${authority.url}/v1/updates/check`,
    ]);
  });

  it('goes direct to the hosts NO_PROXY names', async () => {
    authority.addLicense(KEY_HTTP);
    const bypassed = await start({ HTTP_PROXY: proxy.url, NO_PROXY: '.example.com,127.0.0.1' });
    await bypassed.activate(KEY_HTTP);
    expect(proxy.requests).toEqual([]);
    expect(authority.requests.map((r) => r.path)).toEqual(['/v1/licenses/activate']);
  });

  it('fails the call (never slips past the proxy) when the proxy variable is unusable', async () => {
    authority.addLicense(KEY_HTTP);
    const misconfigured = await start({ HTTP_PROXY: 'socks5://127.0.0.1:1080' });
    await expect(misconfigured.activate(KEY_HTTP)).rejects.toMatchObject({ code: 'OFFLINE', message: expect.stringContaining('HTTP_PROXY') });
    expect(authority.requests).toEqual([]);
  });
});

describe('update downloads', () => {
  const packages = new PackageServer();
  beforeAll(() => packages.start());
  afterAll(() => packages.close());

  const download = (env: Record<string, string>) => {
    packages.bytes = randomBytes(64 * 1024);
    const ref = { url: packages.url, sha256: createHash('sha256').update(packages.bytes).digest('hex'), length: packages.bytes.length };
    return downloadPackage(ref, { cacheDir: tempDir(), idleTimeoutMs: 5_000, retries: 0, retryBaseDelayMs: 1, userAgent: 'test', env });
  };

  it('go through HTTP_PROXY, and direct to the hosts NO_PROXY names', async () => {
    const file = await download({ HTTP_PROXY: proxy.url });
    expect(fs.readFileSync(file)).toEqual(packages.bytes);
    expect(proxy.requests).toEqual([expect.objectContaining({ method: 'GET', target: packages.url })]);

    expect(fs.readFileSync(await download({ http_proxy: proxy.url, no_proxy: '127.0.0.1' }))).toEqual(packages.bytes);
    expect(proxy.requests).toHaveLength(1);
  });

  it('fail (never slip past the proxy) when the proxy variable is unusable', async () => {
    await expect(download({ HTTP_PROXY: 'socks5://127.0.0.1:1080' })).rejects.toMatchObject({ code: 'DOWNLOAD_FAILED', message: expect.stringContaining('HTTP_PROXY') });
  });

  it('fail, never wait for good, through a proxy that takes the connection and never answers CONNECT', async () => {
    const silent = net.createServer(() => undefined);
    const port = await new Promise<number>((resolve) => silent.listen(0, '127.0.0.1', () => resolve((silent.address() as net.AddressInfo).port)));
    try {
      const ref = { url: 'https://updates.example.com/app-2.0.0.bin', sha256: '0'.repeat(64), length: 10 };
      const attempt = downloadPackage(ref, {
        cacheDir: tempDir(),
        idleTimeoutMs: 1_000,
        retries: 0,
        retryBaseDelayMs: 1,
        userAgent: 'test',
        env: { HTTPS_PROXY: `http://127.0.0.1:${port}` },
      });
      await expect(attempt).rejects.toMatchObject({ code: 'DOWNLOAD_FAILED', message: expect.stringContaining('no answer within 1000 ms') });
    } finally {
      silent.close();
    }
  });
});
