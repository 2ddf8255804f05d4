/**
 * What protection costs: the time to protect a 2 MB JavaScript app into a linux-x64 single
 * executable (per MB of input), and the start-up of that executable with a cached license while
 * the authority is unreachable, against the same app run unprotected by the same Node (the pinned
 * runtime the executable embeds).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { nodeRuntime } from '@latchkey/native/runtimes';
import { zipOf } from '../builds/archives.js';
import { NODE_RUNTIMES_DIR } from '../support/server.js';
import { defineBench, expectStatus } from './lib.js';
import { sampleSummary } from './samples.js';
import { seedDeveloper, seedLicense, seedProPlan } from './seed.js';

const BENCH = 'protection';
const STARTS = Number(process.env.BENCH_PROTECTED_STARTS ?? 15);
const APP_BYTES = 2 * 1024 * 1024;
const RATIO_GOAL = 1.3;
const ADDED_GOAL_MS = 150;
const run = promisify(execFile);

/** An app of about 2 MB of code: a table it counts, so every byte is parsed. */
function appSource(): string {
  const rows: string[] = [];
  for (let size = 0; size < APP_BYTES; size += 70) rows.push(`  '${randomBytes(32).toString('hex')}',`);
  return `const table = [\n${rows.join('\n')}\n];\nconsole.log('rows', table.length);\n`;
}

/** Wall time of one process start to exit, in ms. */
async function timedStart(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  const { stdout } = await run(file, args, { env, encoding: 'utf8' });
  if (!stdout.startsWith('rows ')) throw new Error(`unexpected output: ${stdout.slice(0, 200)}`);
  return performance.now() - started;
}

export default defineBench({
  title: 'protection: protect a 2 MB app (per MB), start-up of its executable offline with a cached license vs the same app unprotected',
  async run(ctx) {
    const progress = (message: string) => process.stderr.write(`  ${BENCH}: ${message}\n`);
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-bench-protection-'));
    try {
      const latchkey = await ctx.startLatchkey({ LATCHKEY_NODE_RUNTIMES_DIR: NODE_RUNTIMES_DIR });
      const dev = await seedDeveloper(latchkey.call);
      await seedProPlan(latchkey.call, latchkey.adminToken, dev);
      const app = expectStatus(await latchkey.call('POST', '/v1/apps', { apiKey: dev.apiKey, body: { name: 'Bench App', platforms: ['linux-x64'] } }), 201, 'create app').body as {
        id: string;
      };
      const source = appSource();
      const input = await zipOf({ 'package.json': JSON.stringify({ name: 'bench-app', version: '1.0.0', main: 'main.js' }), 'main.js': source });

      progress('protecting for linux-x64 (the runtime is fetched once into the shared cache)');
      const form = new FormData();
      form.set('platform', 'linux-x64');
      form.set('artifact', new Blob([new Uint8Array(input)]), 'bench-app.zip');
      const started = performance.now();
      const uploaded = await fetch(`${latchkey.url}/v1/apps/${app.id}/builds`, { method: 'POST', headers: { 'x-api-key': dev.apiKey }, body: form });
      const build = (await uploaded.json()) as { id: string };
      let state: { status: string; failure_reason: string | null } = { status: 'QUEUED', failure_reason: null };
      for (let i = 0; i < 600 && !['READY', 'FAILED'].includes(state.status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        state = (await latchkey.call('GET', `/v1/apps/${app.id}/builds/${build.id}`, { apiKey: dev.apiKey })).body;
      }
      const protectSeconds = (performance.now() - started) / 1000;
      if (state.status !== 'READY') throw new Error(`the build did not become READY: ${state.status} ${state.failure_reason}`);
      const inputMb = source.length / 1e6;
      ctx.record([sampleSummary(BENCH, 'protect (upload to READY), linux-x64', `${inputMb.toFixed(1)} MB of code`, [protectSeconds * 1000])]);
      ctx.expect({
        name: 'protection time per MB of input',
        wanted: 'reported',
        measured: `${(protectSeconds / inputMb).toFixed(1)} s/MB (${protectSeconds.toFixed(1)} s for ${inputMb.toFixed(1)} MB)`,
        met: true,
      });

      const link = (await latchkey.call('GET', `/v1/apps/${app.id}/builds/${build.id}/download`, { apiKey: dev.apiKey })).body as { download_url: string };
      const executable = path.join(work, 'bench-app');
      fs.writeFileSync(executable, Buffer.from(await (await fetch(link.download_url)).arrayBuffer()), { mode: 0o755 });
      const home = fs.mkdtempSync(path.join(work, 'home-'));
      const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_DATA_HOME: path.join(home, 'data') };
      const license = await seedLicense(latchkey.call, dev, { app_id: app.id });
      progress('activating once, then the authority goes away');
      await timedStart(executable, [], { ...env, LATCHKEY_LICENSE_KEY: license.license_key });
      await latchkey.stop();

      const plainNode = await nodeRuntime('linux-x64', NODE_RUNTIMES_DIR);
      const plainApp = path.join(work, 'main.js');
      fs.writeFileSync(plainApp, source);
      progress(`${STARTS} starts each, alternating`);
      const protectedMs: number[] = [];
      const plainMs: number[] = [];
      for (let i = 0; i < STARTS; i++) {
        protectedMs.push(await timedStart(executable, [], env));
        plainMs.push(await timedStart(plainNode, [plainApp], env));
      }
      const protectedRow = sampleSummary(BENCH, 'start to exit, cached license, offline', 'protected executable', protectedMs);
      const plainRow = sampleSummary(BENCH, 'start to exit, cached license, offline', `unprotected, Node ${path.basename(path.dirname(path.dirname(plainNode)))}`, plainMs);
      ctx.record([protectedRow, plainRow]);
      const ratio = protectedRow.p50Ms / plainRow.p50Ms;
      const added = protectedRow.p50Ms - plainRow.p50Ms;
      ctx.expect({
        name: 'protected start-up vs unprotected (median)',
        wanted: `<= ${RATIO_GOAL}x and < ${ADDED_GOAL_MS} ms added`,
        measured: `${protectedRow.p50Ms.toFixed(0)} ms vs ${plainRow.p50Ms.toFixed(0)} ms: ${ratio.toFixed(2)}x, ${added.toFixed(0)} ms added`,
        met: ratio <= RATIO_GOAL && added < ADDED_GOAL_MS,
      });
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  },
});
