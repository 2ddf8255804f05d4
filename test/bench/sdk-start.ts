/**
 * One application start in a fresh process, for `sdk-check.bench.ts`, which runs it as an esbuild
 * bundle: the clock starts before any import, so module loading counts, as it does for an app.
 * Prints the milliseconds, and the CPU time the process had spent by the answer, as JSON.
 *   sdk:         createLicenseClient() + check() from the cache, the license server unreachable;
 *                then, apart, the move of the secrets into sodium-native memory that follows
 *   cold:        the same from a copy of that cache without the remembered fingerprint, so the
 *                hardware is probed before check() answers, as on a first start
 *   bare:        read one token file and verify it (protocol.ts, node:crypto)
 */
const started = performance.now();
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const [mode, configJson] = process.argv.slice(2) as [string, string];
const config = JSON.parse(configJson) as {
  appId: string;
  serverUrl: string;
  publicKeys: { keys: never[] };
  fingerprintSalt: string;
  cacheDir: string;
  /** The activated cache, copied without its fingerprint memo into `cacheDir` for a cold start. */
  cacheFile: string;
  tokenFile: string;
  device: string;
};

async function start(): Promise<string> {
  if (mode === 'cold') {
    const copyStarted = performance.now();
    const fs = await import('node:fs');
    const path = await import('node:path');
    const envelope = JSON.parse(fs.readFileSync(config.cacheFile, 'utf8')) as Record<string, unknown>;
    delete envelope.memo;
    fs.writeFileSync(path.join(config.cacheDir, 'license.cache'), JSON.stringify(envelope), { mode: 0o600 });
    // Timed with the imports, as every mode here, less this copy of the cache, which no app makes.
    const copyMs = performance.now() - copyStarted;
    const { createLicenseClient } = await import('../../runtime-sdk/index.js');
    const license = await createLicenseClient({ ...config, appVersion: '1.0.0' });
    const { state } = await license.check();
    const ms = performance.now() - started - copyMs;
    const cpu = cpuMs();
    await license.dispose();
    return JSON.stringify({ ms, state, cpuMs: cpu });
  }
  if (mode === 'sdk') {
    const { createLicenseClient } = await import('../../runtime-sdk/index.js');
    const license = await createLicenseClient({ ...config, appVersion: '1.0.0' });
    const { state } = await license.check();
    const elapsed = performance.now() - started;
    const cpu = cpuMs();
    // Then sodium-native loads (queued right after the answer): off the wait, but reported.
    const answered = performance.now();
    let { memoryProtection } = await license.check();
    // The move waits for the module to load and the secrets to be copied: bounded, 2 s at most.
    for (let wait = 0; memoryProtection !== 'sodium' && wait < 2000; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      ({ memoryProtection } = await license.check());
    }
    const afterMs = performance.now() - answered;
    await license.dispose();
    return JSON.stringify({ ms: elapsed, state, cpuMs: cpu, afterMs, memoryProtection });
  }
  if (mode === 'bare') {
    const { readFile } = await import('node:fs/promises');
    const { verifyRuntimeToken } = await import('../../runtime-sdk/protocol.js');
    const token = (await readFile(config.tokenFile, 'utf8')).trim();
    const claims = verifyRuntimeToken(token, config.publicKeys, { appId: config.appId, device: config.device, nowSeconds: Date.now() / 1000 });
    return JSON.stringify({ ms: performance.now() - started, state: claims.sub ? 'valid' : 'invalid', cpuMs: cpuMs() });
  }
  throw new Error(`unknown mode ${mode}`);
}

// The answer first, then stdout: `process.stdout.write(await start())` would open the pipe (a stream
// and the modules behind it, milliseconds) before start() ran, inside the time measured.
const answer = await start();
process.stdout.write(`${answer}\n`);
