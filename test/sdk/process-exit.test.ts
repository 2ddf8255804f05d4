/**
 * Issue 20 item 5: nothing the SDK starts keeps a command-line app alive. The app starts from its
 * cached license while the authority accepts the connection and never answers; once the app's last
 * line ran, the process must be gone at once (the bench `sdk-exit` measures how fast), not after
 * the request's timeouts and retries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../runtime-sdk/index.js';
import { FakeAuthority } from './support/fake-authority.js';
import { tempDir } from './support/fake-machine.js';
import { runNetworkApp, startNetworkApp } from './support/network-app-process.js';
import { ConnectProxy } from './support/connect-proxy.js';
import { RecordingProxy } from './support/recording-proxy.js';
import { SilentServer } from './support/silent-server.js';
import { TlsFront } from './support/tls-front.js';

const KEY = 'EX1T-2345-6789-ABCD';
/** Generous, for a loaded machine: the request alone would hold the app 10 s per attempt. */
const EXIT_BOUND_MS = 5_000;
let authority: FakeAuthority;
let silent: SilentServer;
let cacheDir: string;

const options = (serverUrl: string, extra: Record<string, unknown> = {}) => ({
  appId: authority.appId,
  serverUrl,
  publicKeys: authority.publicKeys,
  fingerprintSalt: 'salt-exit',
  appVersion: '1.0.0',
  cacheDir,
  memoryProtection: 'masked',
  // The start-up refresh goes out at once, so it is in flight when the app ends; the defaults
  // (10 s per attempt, 2 retries) are what would hold the process.
  startupDelayMs: 0,
  ...extra,
});

beforeAll(async () => {
  authority = await new FakeAuthority(systemClock).start();
  authority.addLicense(KEY);
  silent = await new SilentServer().start();
  cacheDir = tempDir();
  expect(await runNetworkApp({ action: 'activate', options: options(authority.url), key: KEY })).toContain('valid');
});
afterAll(async () => {
  await authority.close();
  await silent.close();
});

/** Starts the app against the silent server, lets it end once its request hangs there, and answers how long the exit took. */
async function exitAfterLastLine(extra: Record<string, unknown>, dispose: boolean, through?: { serverUrl: string; env: Record<string, string> }): Promise<number> {
  const before = silent.connections;
  const app = startNetworkApp({ action: 'start', options: options(through?.serverUrl ?? silent.url, extra), dispose }, through?.env);
  await app.line('waiting');
  while (silent.connections === before) await new Promise((resolve) => setTimeout(resolve, 20));
  app.child.stdin.end();
  const lastLine = await app.line('last line');
  const exit = await app.exit(10_000);
  expect(exit, app.output()).not.toBe('still running');
  if (exit === 'still running') return Number.POSITIVE_INFINITY;
  expect(exit.code, app.output()).toBe(0);
  expect(app.output()).toMatch(/^valid$/m);
  return exit.at - lastLine;
}

describe('a command-line app with the SDK, the authority never answering', () => {
  it('exits right after its last line when it never disposes the client', async () => {
    expect(await exitAfterLastLine({}, false)).toBeLessThan(EXIT_BOUND_MS);
  });

  it('exits right after its last line when it disposes the client (the request is aborted)', async () => {
    expect(await exitAfterLastLine({}, true)).toBeLessThan(EXIT_BOUND_MS);
  });

  it('exits right after its last line with a blocking start-up revalidation that ran out of budget', async () => {
    expect(await exitAfterLastLine({ revalidate: { blockingMs: 200 } }, false)).toBeLessThan(EXIT_BOUND_MS);
  });

  it('exits right after its last line when the request hangs in an https tunnel through HTTPS_PROXY', async () => {
    const front = await new TlsFront(silent.url).start();
    const proxy = await new ConnectProxy().start();
    try {
      const env = { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: front.certificateFile };
      expect(await exitAfterLastLine({}, false, { serverUrl: front.url, env })).toBeLessThan(EXIT_BOUND_MS);
      expect(proxy.requests).toEqual([expect.objectContaining({ method: 'CONNECT' })]);
    } finally {
      await proxy.close();
      await front.close();
    }
  });
});

describe('a call the app awaits', () => {
  it('holds the process until answered, even when queued behind the refresh the SDK started, on a slow network', async () => {
    const slow = await new RecordingProxy().start();
    slow.upstream = authority.url;
    slow.delayMs = 500;
    try {
      // The start-up refresh goes out first; the app's top-level `await license.refresh()` waits behind it.
      const output = await runNetworkApp({ action: 'refresh', options: options(slow.url), settleMs: 100 });
      expect(output).toMatch(/^valid$/m);
      expect(slow.requests.map((r) => r.path)).toEqual(['/v1/licenses/refresh', '/v1/licenses/refresh']);
    } finally {
      await slow.close();
    }
  });
});

describe('an app that starts from its cache, offline', () => {
  it('answers check() before Node loads http, https or tls: they load with the first request (10 to 20 ms of a start)', async () => {
    const app = startNetworkApp({ action: 'start', options: options(silent.url, { startupDelayMs: 60_000 }), dispose: true });
    await app.line('waiting');
    app.child.stdin.end();
    expect(await app.exit(10_000)).toMatchObject({ code: 0 });
    expect(app.output()).toMatch(/^valid$/m);
    expect(app.output()).toMatch(/^network modules: none$/m);
  });
});
