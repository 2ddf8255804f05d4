import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLatchkey } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { owner, settled, type Owner } from './support.js';

// Issue 18 item 5: `latchkey builds upload` through a resumable upload session (by default above
// 100 MB; `--resumable` here, with small chunks, to keep the file small).
let server: TestServer;
let o: Owner;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  o = await owner(server);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-resumable-'));
});
afterAll(async () => {
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** What a load balancer answers while the server behind it restarts: its own page, not the API's JSON. */
const BAD_GATEWAY = 'HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 20\r\nConnection: close\r\n\r\n<h1>Bad Gateway</h1>';

/**
 * A TCP proxy to the server that drops the connection in the middle of the `cutAt`-th chunk PUT
 * (after passing some of its bytes on), as a flaky network would; then answers the next `outage`
 * connections with a 502 of its own, as a load balancer does while the server restarts.
 */
async function flakyProxy(target: string, cutAt: number, outage = 0): Promise<{ url: string; cuts: () => number; gatewayErrors: () => number; close(): void }> {
  const { hostname, port } = new URL(target);
  let puts = 0;
  let cuts = 0;
  let gatewayErrors = 0;
  const proxy = net.createServer((client) => {
    if (cuts > 0 && gatewayErrors < outage) {
      gatewayErrors++;
      client.once('data', () => client.end(BAD_GATEWAY));
      client.on('error', () => undefined);
      return;
    }
    const upstream = net.connect(Number(port), hostname);
    let cutting = -1;
    client.on('data', (chunk: Buffer) => {
      if (cutting < 0) {
        const at = chunk.indexOf('PUT /v1/apps/');
        if (at >= 0 && ++puts === cutAt) cutting = 20_000;
      }
      if (cutting >= 0) {
        cutting -= chunk.length;
        if (cutting < 0) {
          cuts++;
          client.destroy();
          upstream.destroy();
          return;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`, cuts: () => cuts, gatewayErrors: () => gatewayErrors, close: () => proxy.close() };
}

describe('latchkey builds upload --resumable', { timeout: 120_000 }, () => {
  it("uploads in chunks, resumes after a connection dropped mid-chunk, and the build has the file's SHA-256", async () => {
    const bytes = randomBytes(600_000);
    const artifact = path.join(dir, 'tool.bin');
    fs.writeFileSync(artifact, bytes);
    const proxy = await flakyProxy(server.url, 3);
    try {
      const res = await runLatchkey(proxy.url, o.dev.apiKey, [
        'builds',
        'upload',
        '--app',
        o.app.id,
        '--artifact',
        artifact,
        '--platform',
        'cross_platform',
        '--resumable',
        '--chunk-bytes',
        '131072',
        '--json',
      ]);
      expect(res.code, res.stderr).toBe(0);
      expect(proxy.cuts()).toBe(1);
      expect(res.stderr).toMatch(/Upload interrupted .*; resuming/);
      const build = JSON.parse(res.stdout);
      expect(build.status).toBe('READY');
      const stored = await settled(o, build.id);
      expect(stored.artifact_sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(stored.artifact_size_bytes).toBe(bytes.length);
    } finally {
      proxy.close();
    }
  });

  it('goes on through a load balancer answering 502 while the server restarts, where it asks how far the upload got too', async () => {
    const bytes = randomBytes(400_000);
    const artifact = path.join(dir, 'tool-behind-proxy.bin');
    fs.writeFileSync(artifact, bytes);
    // The cut chunk, then the status checks after it, meet the 502s: three interruptions in a row, within the five allowed.
    const proxy = await flakyProxy(server.url, 2, 2);
    try {
      const args = ['builds', 'upload', '--app', o.app.id, '--artifact', artifact, '--platform', 'cross_platform', '--resumable', '--chunk-bytes', '131072', '--json'];
      const res = await runLatchkey(proxy.url, o.dev.apiKey, args);
      expect(res.code, res.stderr).toBe(0);
      expect([proxy.cuts(), proxy.gatewayErrors()]).toEqual([1, 2]);
      expect(res.stderr.match(/Upload interrupted/g)).toHaveLength(3);
      const stored = await settled(o, JSON.parse(res.stdout).id);
      expect(stored.artifact_sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    } finally {
      proxy.close();
    }
  });
});
