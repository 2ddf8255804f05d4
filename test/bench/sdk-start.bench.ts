/**
 * Issue 20: what the SDK adds to an app's start. Warm start: `createLicenseClient()` + `check()` with
 * the license and the remembered fingerprint in the cache, the authority unreachable (so: offline),
 * against a bare start measured in the same run and alternating with it (read one token file and
 * verify its signature with node:crypto), in a warm process. Cold start: the same with the hardware
 * probed first (no remembered fingerprint), one fresh process per start since the SDK reads the
 * hardware once per process. Goal: added time under 10 ms median and 20 ms p99.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { systemClock } from '../../runtime-sdk/clock.js';
import { createLicenseClient } from '../../runtime-sdk/index.js';
import { verifyRuntimeToken } from '../../runtime-sdk/protocol.js';
import { FakeAuthority } from '../sdk/support/fake-authority.js';
import { tempDir } from '../sdk/support/fake-machine.js';
import { defineBench } from './lib.js';
import { REPO_ROOT } from './processes.js';
import { sampleSummary } from './samples.js';

const BENCH = 'sdk-start';
const WARM_SAMPLES = Number(process.env.BENCH_SDK_SAMPLES ?? 300);
const COLD_SAMPLES = Number(process.env.BENCH_SDK_PROCESSES ?? 10);
const GOAL_P50_MS = 10;
const GOAL_P99_MS = 20;
const KEY = 'STRT-2345-6789-ABCD';

const run = promisify(execFile);

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export default defineBench({
  title: 'runtime SDK warm start: check() added time from the cache, offline, vs a bare token check; cold start with the hardware probe',
  async run(ctx) {
    const progress = (message: string) => process.stderr.write(`  ${BENCH}: ${message}\n`);
    // One real activation of this machine; then the authority goes away and every start is offline.
    const authority = await new FakeAuthority(systemClock).start();
    authority.addLicense(KEY);
    const cacheDir = tempDir('latchkey-bench-start-');
    const options = { appId: authority.appId, serverUrl: authority.url, publicKeys: authority.publicKeys, fingerprintSalt: 'bench-salt', appVersion: '1.0.0', cacheDir, refreshOnStart: false };
    const activating = await createLicenseClient(options);
    await activating.activate(KEY);
    await activating.dispose();
    await authority.close();
    const device = (JSON.parse(authority.requests[0]!.body) as { device_fingerprint: string }).device_fingerprint;
    const tokenFile = path.join(cacheDir, 'token.jws');
    await writeFile(tokenFile, authority.issuedTokens[0]!, { mode: 0o600 });

    /** One app start, timed to the answer; disposal runs after the clock stops, as an app would not wait for it. */
    const sdkStart = async (): Promise<number> => {
      const started = performance.now();
      const license = await createLicenseClient(options);
      const { state } = await license.check();
      const elapsed = performance.now() - started;
      await license.dispose();
      if (state !== 'valid') throw new Error(`a warm start answered ${state}`);
      return elapsed;
    };
    const bareStart = async (): Promise<number> => {
      const started = performance.now();
      const token = (await readFile(tokenFile, 'utf8')).trim();
      verifyRuntimeToken(token, options.publicKeys, { appId: options.appId, device, nowSeconds: Date.now() / 1000 });
      return performance.now() - started;
    };

    progress(`${WARM_SAMPLES} warm starts each (SDK, bare), alternating`);
    // Warm-up: modules loaded, JIT warm.
    for (let i = 0; i < 20; i++) {
      await sdkStart();
      await bareStart();
    }
    const sdk: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < WARM_SAMPLES; i++) {
      sdk.push(await sdkStart());
      bare.push(await bareStart());
    }
    const added = sdk.map((ms, i) => ms - bare[i]!);

    progress(`${COLD_SAMPLES} cold starts (hardware probe), one fresh process each`);
    const template = path.join(cacheDir, 'license.cache');
    const cold: number[] = [];
    for (let i = 0; i < COLD_SAMPLES; i++) {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', 'test/bench/sdk-cold-start.ts', JSON.stringify({ ...options, cacheDir: tempDir('latchkey-bench-cold-') }), template], { cwd: REPO_ROOT });
      const result = JSON.parse(stdout) as { ms: number; state: string };
      if (result.state !== 'valid') throw new Error(`a cold start answered ${result.state}`);
      cold.push(result.ms);
    }

    const rows = [
      sampleSummary(BENCH, 'warm start, offline, cached license', 'sdk createLicenseClient+check()', sdk),
      sampleSummary(BENCH, 'warm start, offline, cached license', 'bare read+verify', bare),
      sampleSummary(BENCH, 'warm start, offline, cached license', 'added (paired sdk - bare)', added),
      sampleSummary(BENCH, 'cold start, hardware probe, fresh process', 'sdk createLicenseClient+check()', cold),
    ];
    ctx.record(rows.map(({ bench: _bench, ...row }) => row));
    const [addedP50, addedP99] = [percentile(added, 50), percentile(added, 99)];
    const ratio = rows[0]!.p50Ms / rows[1]!.p50Ms;
    progress(`warm added p50 ${addedP50.toFixed(2)} ms, p99 ${addedP99.toFixed(2)} ms; sdk/bare median ratio ${ratio.toFixed(1)}x; cold p50 ${rows[3]!.p50Ms.toFixed(1)} ms`);
    ctx.expect({ name: 'warm start check() added time, median', wanted: `< ${GOAL_P50_MS} ms`, measured: `${addedP50.toFixed(2)} ms (sdk/bare ${ratio.toFixed(1)}x)`, met: addedP50 < GOAL_P50_MS });
    ctx.expect({ name: 'warm start check() added time, p99', wanted: `< ${GOAL_P99_MS} ms`, measured: `${addedP99.toFixed(2)} ms`, met: addedP99 < GOAL_P99_MS });
    ctx.expect({ name: 'cold start with the hardware probe (reported)', wanted: 'reported', measured: `p50 ${rows[3]!.p50Ms.toFixed(1)} ms, p99 ${rows[3]!.p99Ms.toFixed(1)} ms`, met: true });
  },
});
