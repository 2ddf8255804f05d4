/**
 * What the runtime SDK adds to an app's start. `check()` with a valid cached token and the license
 * server unreachable, against a bare start that only reads one token file and verifies it with
 * node:crypto, alternating: in fresh processes running an esbuild bundle (module loading included:
 * what a user of a shipped app waits for; issue 4: under 30 ms added) and in a warm process (the SDK's
 * own work, paired sample by sample; issue 20: under 10 ms median, 20 ms p99). Cold start: the cache
 * holds the license but not the remembered fingerprint, so the hardware is probed first, as on a
 * first start (issue 25: under 40 ms median on Linux). Plus the fingerprint alone: cold (every probe
 * run again) and remembered (sealed memo opened with the OS id: what a restart pays, under 5 ms).
 * The CPU column is the CPU time of each start (the whole process for fresh ones).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createLicenseClient } from '../../runtime-sdk/index.js';
import { computeFingerprint } from '../../runtime-sdk/fingerprint/index.js';
import { hardwareProbes, importSystemInformation } from '../../runtime-sdk/fingerprint/components.js';
import { quickAnchor } from '../../runtime-sdk/fingerprint/quick-anchor.js';
import { hostPlatform } from '../../runtime-sdk/platform.js';
import { verifyRuntimeToken } from '../../runtime-sdk/protocol.js';
import { deriveMemoKey } from '../../runtime-sdk/token-store/cache-keys.js';
import { openMemo, readEnvelope } from '../../runtime-sdk/token-store/cache-file.js';
import { maskedMemory } from '../../runtime-sdk/token-store/secret-memory.js';
import { systemClock } from '../../runtime-sdk/clock.js';
import { FakeAuthority } from '../sdk/support/fake-authority.js';
import { tempDir } from '../sdk/support/fake-machine.js';
import { defineBench } from './lib.js';
import { REPO_ROOT } from './processes.js';
import { bundleSdkScript } from './sdk-bundle.js';
import { cpuMsSince, sampleSummary, timedWithCpu } from './samples.js';

const BENCH = 'sdk-check';
const GOAL_FRESH_MS = 30;
const GOAL_WARM_P50_MS = 10;
const GOAL_WARM_P99_MS = 20;
const GOAL_FIRST_START_P50_MS = 40;
const GOAL_RESTART_FINGERPRINT_P50_MS = 5;
const WARM_SAMPLES = Number(process.env.BENCH_SDK_SAMPLES ?? 200);
const PROCESS_SAMPLES = Number(process.env.BENCH_SDK_PROCESSES ?? 15);
const KEY = 'BNCH-2345-6789-ABCD';

type StartConfig = Record<string, unknown>;

const summary = (caseName: string, target: string, samples: number[], cpuMs?: number[]) => sampleSummary(BENCH, caseName, target, samples, cpuMs);
/** Wall-clock and CPU samples of runs timed with `timedWithCpu`, as `summary` takes them. */
const split = (runs: { ms: number; cpuMs: number }[]): [number[], number[]] => [runs.map((r) => r.ms), runs.map((r) => r.cpuMs)];

interface FreshStart {
  ms: number;
  state: string;
  /** CPU time of the whole process (Node's own start included) up to the answer. */
  cpuMs: number;
  /** sdk mode: the sodium-native load and move of the secrets, after the answer. */
  afterMs?: number;
  memoryProtection?: string;
}

function startInFreshProcess(script: string, mode: string, config: StartConfig): Promise<FreshStart> {
  return new Promise((resolve, reject) => {
    // With BENCH_CPU_PROF=<dir>, each start writes its V8 CPU profile under <dir>/sdk-<mode>.
    const profileDir = process.env.BENCH_CPU_PROF;
    const flags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir, `sdk-${mode}`)}`, '--cpu-prof-interval=100'] : [];
    const child = spawn(process.execPath, [...flags, script, mode, JSON.stringify(config)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      const result = code === 0 ? (JSON.parse(output) as FreshStart) : undefined;
      if (result?.state === 'valid') resolve(result);
      else reject(new Error(`${mode} start failed (${code}): ${output}`));
    });
  });
}

/** A and B alternate so that a machine busy with other work slows both alike. */
async function alternate<T>(count: number, a: () => Promise<T>, b: () => Promise<T>): Promise<[T[], T[]]> {
  const first: T[] = [];
  const second: T[] = [];
  for (let i = 0; i < count; i++) {
    first.push(await a());
    second.push(await b());
  }
  return [first, second];
}

export default defineBench({
  title:
    'runtime SDK start: check() from the cache offline vs a bare token check (node:crypto), fresh and warm; first start with the hardware probe; fingerprint cold and on restart',
  async run(ctx) {
    const progress = (message: string) => process.stderr.write(`  ${BENCH}: ${message}\n`);

    // A real activation of this machine, then the authority goes away: every start is offline.
    const authority = await new FakeAuthority(systemClock).start();
    authority.addLicense(KEY);
    const cacheDir = tempDir('latchkey-bench-sdk-');
    const options = { appId: authority.appId, serverUrl: authority.url, publicKeys: authority.publicKeys, fingerprintSalt: 'bench-salt', appVersion: '1.0.0', cacheDir };
    const activating = await createLicenseClient(options);
    await activating.activate(KEY);
    await activating.dispose();
    await authority.close();
    const device = (JSON.parse(authority.requests[0]!.body) as { device_fingerprint: string }).device_fingerprint;
    const tokenFile = path.join(cacheDir, 'token.jws');
    await writeFile(tokenFile, authority.issuedTokens[0]!);
    const config: StartConfig = { ...options, tokenFile, device, cacheFile: path.join(cacheDir, 'license.cache') };

    /** Timed up to the answer; disposal is not what an app waits for, so it runs after the clock stops. */
    const sdkStart = async () => {
      const cpu = process.cpuUsage();
      const started = performance.now();
      const license = await createLicenseClient(options);
      const status = await license.check();
      const elapsed = performance.now() - started;
      const cpuMs = cpuMsSince(cpu);
      await license.dispose();
      if (status.state !== 'valid') throw new Error(`cached start answered ${status.state}`);
      return { ms: elapsed, cpuMs };
    };
    const bareStart = async () => {
      const { readFile } = await import('node:fs/promises');
      verifyRuntimeToken((await readFile(tokenFile, 'utf8')).trim(), options.publicKeys, { appId: options.appId, device, nowSeconds: Date.now() / 1000 });
    };

    const script = await bundleSdkScript(path.join(REPO_ROOT, 'test/bench/sdk-start.ts'), path.join(REPO_ROOT, 'test/.artifacts/bench-sdk-start'));
    progress(`${PROCESS_SAMPLES} fresh-process starts each (SDK, bare), bundled with esbuild`);
    const [sdkRuns, bareRuns] = await alternate(
      PROCESS_SAMPLES,
      () => startInFreshProcess(script, 'sdk', config),
      () => startInFreshProcess(script, 'bare', config),
    );
    if (sdkRuns.some((r) => r.memoryProtection !== 'sodium')) throw new Error('the secrets did not move into sodium memory');
    const [sdkFresh, bareFresh] = [sdkRuns.map((r) => r.ms), bareRuns.map((r) => r.ms)];

    progress(`${WARM_SAMPLES} in-process starts each (SDK, bare)`);
    await alternate(10, sdkStart, () => timedWithCpu(bareStart)); // warm-up: modules loaded, JIT warm
    const [sdkWarmRuns, bareWarmRuns] = await alternate(WARM_SAMPLES, sdkStart, () => timedWithCpu(bareStart));
    const [[sdkWarm, sdkWarmCpu], [bareWarm, bareWarmCpu]] = [split(sdkWarmRuns), split(bareWarmRuns)];
    const addedWarm = sdkWarm.map((ms, i) => ms - bareWarm[i]!);

    progress('cold starts (hardware probe, fresh process); fingerprint cold (probes) and warm (remembered)');
    const coldStarts: FreshStart[] = [];
    for (let i = 0; i < PROCESS_SAMPLES; i++) coldStarts.push(await startInFreshProcess(script, 'cold', { ...config, cacheDir: tempDir('latchkey-bench-cold-') }));
    // A fresh list of probes each time: the process keeps one reading per source of probes (components.ts).
    const coldFingerprint: { ms: number; cpuMs: number }[] = [];
    for (let i = 0; i < 20; i++) {
      coldFingerprint.push(
        await timedWithCpu(async () =>
          computeFingerprint({
            salt: options.fingerprintSalt,
            platform: hostPlatform,
            timeoutMs: 3000,
            probes: await hardwareProbes(hostPlatform, importSystemInformation, () => {}),
          }),
        ),
      );
    }
    const rememberedFingerprint: { ms: number; cpuMs: number }[] = [];
    for (let i = 0; i < WARM_SAMPLES; i++) {
      rememberedFingerprint.push(
        await timedWithCpu(async () => {
          const read = await readEnvelope(path.join(cacheDir, 'license.cache'));
          const anchor = await quickAnchor(hostPlatform);
          const binding = read.kind === 'present' && read.envelope.binding?.kind === 'install' ? Buffer.from(read.envelope.binding.id, 'base64') : undefined;
          const key = maskedMemory.store(deriveMemoKey(anchor!, options.fingerprintSalt, options.appId, binding));
          const memo = read.kind === 'present' ? openMemo(read.envelope, key, `latchkey-license-cache/v1/${options.appId}`) : undefined;
          key.dispose();
          // The memo is the fingerprint's hash with its component hashes, as JSON.
          if (!memo || (JSON.parse(memo.toString('utf8')) as { hash?: string }).hash !== device) throw new Error('the remembered fingerprint does not match');
        }),
      );
    }

    const cpuOf = (runs: FreshStart[]) => runs.map((r) => r.cpuMs);
    const rows = [
      summary('start, fresh process, bundled (imports included)', 'sdk check()', sdkFresh, cpuOf(sdkRuns)),
      summary('start, fresh process, bundled (imports included)', 'bare read+verify', bareFresh, cpuOf(bareRuns)),
      summary(
        'after the answer, fresh process: sodium-native load',
        'sdk',
        sdkRuns.map((r) => r.afterMs!),
      ),
      summary('start, warm process', 'sdk check()', sdkWarm, sdkWarmCpu),
      summary('start, warm process', 'bare read+verify', bareWarm, bareWarmCpu),
      summary('start, warm process', 'added (paired sdk - bare)', addedWarm),
      summary(
        'first start: hardware probe, fresh process, bundled',
        'sdk check()',
        coldStarts.map((r) => r.ms),
        cpuOf(coldStarts),
      ),
      summary('fingerprint cold: every probe, modules loaded', 'sdk', ...split(coldFingerprint)),
      summary('fingerprint on restart: remembered, cache + OS id', 'sdk', ...split(rememberedFingerprint)),
    ];
    ctx.record(rows.map(({ bench: _bench, ...row }) => row));
    const addedFresh = rows[0]!.p50Ms - rows[1]!.p50Ms;
    const [warm, cold, coldProbe, remembered] = [rows[5]!, rows[6]!, rows[7]!, rows[8]!];
    ctx.expect({ name: 'median added to start-up, fresh process', wanted: `< ${GOAL_FRESH_MS} ms`, measured: `${addedFresh.toFixed(1)} ms`, met: addedFresh < GOAL_FRESH_MS });
    ctx.expect({ name: 'warm start check() added time, median', wanted: `< ${GOAL_WARM_P50_MS} ms`, measured: `${warm.p50Ms.toFixed(2)} ms`, met: warm.p50Ms < GOAL_WARM_P50_MS });
    ctx.expect({ name: 'warm start check() added time, p99', wanted: `< ${GOAL_WARM_P99_MS} ms`, measured: `${warm.p99Ms.toFixed(2)} ms`, met: warm.p99Ms < GOAL_WARM_P99_MS });
    ctx.expect({
      name: 'first start with the hardware probe, fresh process, median',
      wanted: `< ${GOAL_FIRST_START_P50_MS} ms`,
      measured: `p50 ${cold.p50Ms.toFixed(1)} ms, p99 ${cold.p99Ms.toFixed(1)} ms`,
      met: cold.p50Ms < GOAL_FIRST_START_P50_MS,
    });
    ctx.expect({
      name: 'cold fingerprint (every hardware probe), median',
      wanted: `< ${GOAL_FIRST_START_P50_MS} ms`,
      measured: `p50 ${coldProbe.p50Ms.toFixed(1)} ms, p99 ${coldProbe.p99Ms.toFixed(1)} ms`,
      met: coldProbe.p50Ms < GOAL_FIRST_START_P50_MS,
    });
    ctx.expect({
      name: 'fingerprint on restart (remembered), median',
      wanted: `< ${GOAL_RESTART_FINGERPRINT_P50_MS} ms`,
      measured: `p50 ${remembered.p50Ms.toFixed(2)} ms, p99 ${remembered.p99Ms.toFixed(2)} ms`,
      met: remembered.p50Ms < GOAL_RESTART_FINGERPRINT_P50_MS,
    });
  },
});
