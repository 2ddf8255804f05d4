import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { multipartBody } from '../../cli/src/multipart-body.js';
import { defineBench, expectStatus, settings, type Service } from './lib.js';
import { seedApp, seedDeveloper } from './seed.js';

const MIB = 1024 * 1024;
/** 1 GiB, as issue 5 asks; BENCH_ARTIFACT_MB makes a quick run. */
const ARTIFACT_BYTES = Number(process.env.BENCH_ARTIFACT_MB ?? 1024) * MIB;
const RSS_SAMPLE_MS = 20;
const MB = 1e6;

type Direction = 'upload' | 'download';
type Target = 'latchkey' | 'baseline';

interface Transfer {
  seconds: number;
  bytes: number;
  /** Highest resident memory of the server during the transfer, less its memory just before. */
  rssGrowth: number;
}

/**
 * Runs `transfer` while sampling the server's memory. Dirty pages of earlier transfers are written
 * out first: otherwise whichever server writes while the kernel flushes them looks slower.
 */
async function watched(service: Service, transfer: () => Promise<number>): Promise<Transfer> {
  execFileSync('sync');
  const before = service.rssBytes();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, service.rssBytes())), RSS_SAMPLE_MS);
  const started = process.hrtime.bigint();
  try {
    const bytes = await transfer();
    const result = { seconds: Number(process.hrtime.bigint() - started) / 1e9, bytes, rssGrowth: Math.max(0, Math.max(peak, service.rssBytes()) - before) };
    process.stderr.write(`  artifacts: ${service.name} ${(bytes / MB / result.seconds).toFixed(0)} MB/s, RSS +${(result.rssGrowth / MB).toFixed(1)} MB\n`);
    return result;
  } finally {
    clearInterval(sampler);
  }
}

/** Sends `body` (the same multipart bytes to both servers) with its length; answers the response. */
function send(url: string, headers: Record<string, string>, body: Readable): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, async (res) => {
      let text = '';
      for await (const chunk of res) text += chunk;
      resolve({ status: res.statusCode!, text });
    });
    req.on('error', reject);
    pipeline(body, req).catch(reject);
  });
}

/** Downloads and discards; answers the bytes received. */
function receive(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, async (res) => {
        if (res.statusCode !== 200) return reject(new Error(`download answered ${res.statusCode}`));
        let bytes = 0;
        for await (const chunk of res) bytes += (chunk as Buffer).length;
        resolve(bytes);
      })
      .on('error', reject);
  });
}

/**
 * Issue 5: uploading a 1 GiB artifact (authenticated, multipart parsed, streamed to storage,
 * recorded with its job) and downloading it through a signed link (Range-capable, ETag), against
 * node:http streaming the same request bytes to disk and the file back. Each Latchkey upload becomes
 * READY (its job copies, hashes and scans it) before anything else is measured.
 */
export default defineBench({
  title: 'Upload and download of a 1 GiB artifact, against node:http streaming the same bytes to and from disk',
  async run(ctx) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'latchkey-bench-artifact-'));
    try {
      const artifact = path.join(dir, 'artifact.bin');
      const block = randomBytes(MIB);
      await pipeline(
        Readable.from(
          (function* () {
            for (let i = 0; i < ARTIFACT_BYTES / MIB; i++) yield block;
          })(),
        ),
        createWriteStream(artifact),
      );

      const latchkey = await ctx.startLatchkey();
      const baseline = await ctx.startBaseline('artifact-stream');
      const dev = await seedDeveloper(latchkey.call);
      const app = await seedApp(latchkey.call, dev, 'Bench Artifacts');

      const form = async () => multipartBody({ fields: { platform: 'linux-x64' }, file: { field: 'artifact', path: artifact }, onProgress: () => {} });
      const uploadTo = async (service: Service): Promise<{ bytes: number; buildId?: string }> => {
        const { contentType, length, body } = await form();
        const headers = { 'content-type': contentType, 'content-length': String(length), 'x-api-key': dev.apiKey };
        const url = service === latchkey ? `${latchkey.url}/v1/apps/${app.id}/builds` : `${baseline.url}/upload`;
        const res = await send(url, headers, Readable.fromWeb(body as never));
        if (res.status !== 201) throw new Error(`${service.name} upload answered ${res.status}: ${res.text}`);
        return { bytes: length, buildId: service === latchkey ? JSON.parse(res.text).id : undefined };
      };
      const untilReady = async (buildId: string) => {
        for (;;) {
          const build = expectStatus(await latchkey.call('GET', `/v1/apps/${app.id}/builds/${buildId}`, { apiKey: dev.apiKey }), 200, 'get build').body;
          if (build.status === 'READY') return;
          if (build.status === 'FAILED') throw new Error(`build failed: ${build.failure_reason}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      };

      let lastBuild = '';
      let downloadUrl: string | undefined;
      const steps: Record<Direction, Record<Target, () => Promise<Transfer>>> = {
        upload: {
          async latchkey() {
            let buildId = '';
            const transfer = await watched(latchkey, async () => {
              const sent = await uploadTo(latchkey);
              buildId = sent.buildId!;
              return sent.bytes;
            });
            // Its job (copy, hash, scan) is done before anything else is measured.
            await untilReady(buildId);
            lastBuild = buildId;
            return transfer;
          },
          baseline: () => watched(baseline, async () => (await uploadTo(baseline)).bytes),
        },
        download: {
          async latchkey() {
            downloadUrl ??= expectStatus(await latchkey.call('GET', `/v1/apps/${app.id}/builds/${lastBuild}/download`, { apiKey: dev.apiKey }), 200, 'download link').body
              .download_url as string;
            return watched(latchkey, () => receive(downloadUrl!));
          },
          baseline: () => watched(baseline, () => receive(`${baseline.url}/download`)),
        },
      };
      // Throughput counts the measured rounds; memory counts every transfer, the first one included.
      const results: Record<Direction, Record<Target, Transfer[]>> = { upload: { latchkey: [], baseline: [] }, download: { latchkey: [], baseline: [] } };
      const peakGrowth: Record<Direction, Record<Target, number>> = { upload: { latchkey: 0, baseline: 0 }, download: { latchkey: 0, baseline: 0 } };
      for (const direction of ['upload', 'download'] as const) {
        process.stderr.write(`  artifacts: ${direction}s of ${ARTIFACT_BYTES / MIB} MiB: one unmeasured round, then ${settings.rounds} alternating rounds\n`);
        // Round -1 warms up (JIT, lazy loading, first allocations); rounds then alternate which server
        // goes first (A B, B A, ...), so neither always follows the other.
        for (let round = -1; round < settings.rounds; round++) {
          for (const target of round % 2 === 0 ? (['latchkey', 'baseline'] as const) : (['baseline', 'latchkey'] as const)) {
            const transfer = await steps[direction][target]();
            if (round >= 0) results[direction][target].push(transfer);
            peakGrowth[direction][target] = Math.max(peakGrowth[direction][target], transfer.rssGrowth);
          }
        }
      }

      for (const direction of ['upload', 'download'] as const) {
        const rate = (runs: Transfer[]) => runs.reduce((n, r) => n + r.bytes, 0) / MB / runs.reduce((n, r) => n + r.seconds, 0);
        const ours = rate(results[direction].latchkey);
        const base = rate(results[direction].baseline);
        const growth = peakGrowth[direction].latchkey / MB;
        const baseGrowth = peakGrowth[direction].baseline / MB;
        process.stdout.write(
          `artifacts: ${direction} ${ARTIFACT_BYTES / MIB} MiB: latchkey ${ours.toFixed(0)} MB/s, baseline ${base.toFixed(0)} MB/s, ratio ${(ours / base).toFixed(2)}; ` +
            `peak RSS growth latchkey ${growth.toFixed(1)} MB, baseline ${baseGrowth.toFixed(1)} MB\n`,
        );
        ctx.expect({
          name: `${direction} throughput vs baseline`,
          wanted: 'ratio >= 0.70',
          measured: `${(ours / base).toFixed(2)} (${ours.toFixed(0)} vs ${base.toFixed(0)} MB/s)`,
          met: ours / base >= 0.7,
        });
        ctx.expect({ name: `${direction}: server peak RSS growth`, wanted: '< 100 MB', measured: `${growth.toFixed(1)} MB`, met: growth < 100 });
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  },
});
