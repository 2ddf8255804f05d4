import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { downloadPackage } from '../../runtime-sdk/updates/download.js';
import { defineBench, settings } from './lib.js';

const MIB = 1024 * 1024;
/** 1 GiB, as issue 6 asks; BENCH_UPDATE_MB makes a quick run. */
const PACKAGE_BYTES = Number(process.env.BENCH_UPDATE_MB ?? 1024) * MIB;
const RSS_SAMPLE_MS = 20;
const MB = 1e6;
/** What "flat" means here: a handful of 1 MiB buffers in flight, never a share of the package. */
const MAX_RSS_GROWTH_MB = 64;

type Target = 'sdk' | 'baseline';

interface Run {
  seconds: number;
  /** CPU time of this process (all its threads), less noisy than wall time on a shared machine. */
  cpuSeconds: number;
  /** Highest resident memory of this process (the SDK's) during the run, less its memory just before. */
  rssGrowth: number;
}

/** Runs `work` while sampling this process's memory; dirty pages of earlier runs are written out first. */
async function watched(name: string, work: () => Promise<void>): Promise<Run> {
  execFileSync('sync');
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  try {
    await work();
    const used = process.cpuUsage(cpu);
    const run = {
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
      cpuSeconds: (used.user + used.system) / 1e6,
      rssGrowth: Math.max(0, Math.max(peak, process.memoryUsage.rss()) - before),
    };
    process.stderr.write(
      `  update-download: ${name} ${(PACKAGE_BYTES / MB / run.seconds).toFixed(0)} MB/s, ${cpuPerMb([run]).toFixed(2)} CPU ms/MB, RSS +${(run.rssGrowth / MB).toFixed(1)} MB\n`,
    );
    return run;
  } finally {
    clearInterval(sampler);
  }
}

const cpuPerMb = (runs: Run[]) => (runs.reduce((n, r) => n + r.cpuSeconds, 0) * 1000) / ((runs.length * PACKAGE_BYTES) / MB);

/** node:crypto over the file on disk, streamed: what verifying a package costs with no network in the way. */
async function hashFromDisk(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: MIB })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Issue 6: the SDK's download of a 1 GiB build (HTTP from a local server in another process, SHA-256
 * inline, the length cap, written to the update cache) against node:crypto hashing the same file
 * from disk, in the same run; and the SDK process's memory while it downloads, which must stay flat.
 * The server is the artifact bench's plain node:http file server (streams the file with its length).
 */
export default defineBench({
  title: 'Download-plus-verify of a 1 GiB build by the SDK updater, against node:crypto hashing the same file from disk',
  async run(ctx) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'latchkey-bench-update-'));
    try {
      const file = path.join(dir, 'package.bin');
      const block = randomBytes(MIB);
      await pipeline(Readable.from((function* () { for (let i = 0; i < PACKAGE_BYTES / MIB; i++) yield block; })()), createWriteStream(file));
      const sha256 = await hashFromDisk(file);

      const server = await ctx.startBaseline('artifact-stream');
      const upload = await fetch(`${server.url}/upload`, { method: 'POST', body: Readable.toWeb(createReadStream(file)) as ReadableStream, duplex: 'half' } as RequestInit);
      if (upload.status !== 201) throw new Error(`the package server answered ${upload.status} to the upload`);
      const ref = { url: `${server.url}/download`, sha256, length: PACKAGE_BYTES };

      const steps: Record<Target, () => Promise<Run>> = {
        async sdk() {
          const cacheDir = path.join(dir, 'updates');
          await fs.rm(cacheDir, { recursive: true, force: true });
          return watched('sdk download+verify', async () => {
            await downloadPackage(ref, { cacheDir, idleTimeoutMs: 30_000, retries: 0, retryBaseDelayMs: 1_000, userAgent: 'latchkey-bench' });
          });
        },
        baseline: () =>
          watched('node:crypto hash from disk', async () => {
            if ((await hashFromDisk(file)) !== sha256) throw new Error('the file changed');
          }),
      };
      const results: Record<Target, Run[]> = { sdk: [], baseline: [] };
      let peakGrowth = 0;
      process.stderr.write(`  update-download: ${PACKAGE_BYTES / MIB} MiB: one unmeasured round, then ${settings.rounds} alternating rounds\n`);
      // Round -1 warms up; rounds then alternate which goes first, so neither always follows the other.
      for (let round = -1; round < settings.rounds; round++) {
        for (const target of round % 2 === 0 ? (['sdk', 'baseline'] as const) : (['baseline', 'sdk'] as const)) {
          const run = await steps[target]();
          if (round >= 0) results[target].push(run);
          if (target === 'sdk') peakGrowth = Math.max(peakGrowth, run.rssGrowth);
        }
      }

      const rate = (runs: Run[]) => (runs.length * PACKAGE_BYTES) / MB / runs.reduce((n, r) => n + r.seconds, 0);
      const ours = rate(results.sdk);
      const base = rate(results.baseline);
      const growth = peakGrowth / MB;
      process.stdout.write(
        `update-download: ${PACKAGE_BYTES / MIB} MiB: sdk download+verify ${ours.toFixed(0)} MB/s (${cpuPerMb(results.sdk).toFixed(2)} CPU ms/MB), ` +
          `node:crypto from disk ${base.toFixed(0)} MB/s (${cpuPerMb(results.baseline).toFixed(2)} CPU ms/MB), ratio ${(ours / base).toFixed(2)}; ` +
          `SDK peak RSS growth while downloading ${growth.toFixed(1)} MB\n`,
      );
      ctx.expect({ name: 'download+verify throughput vs hashing from disk', wanted: 'ratio >= 0.80', measured: `${(ours / base).toFixed(2)} (${ours.toFixed(0)} vs ${base.toFixed(0)} MB/s)`, met: ours / base >= 0.8 });
      ctx.expect({ name: 'SDK peak RSS growth while downloading', wanted: `< ${MAX_RSS_GROWTH_MB} MB`, measured: `${growth.toFixed(1)} MB`, met: growth < MAX_RSS_GROWTH_MB });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  },
});
