/**
 * One application start in a fresh process, for `sdk-check.bench.ts`, which runs it as an esbuild
 * bundle: the clock starts before any import, so module loading counts, as it does for an app.
 * Prints the milliseconds as JSON.
 *   sdk:         createLicenseClient() + check() from the cache, the license server unreachable;
 *                then, apart, the move of the secrets into sodium-native memory that follows
 *   bare:        read one token file and verify it (protocol.ts, node:crypto)
 *   fingerprint: the full hardware fingerprint, probes included
 */
const started = performance.now();
const [mode, configJson] = process.argv.slice(2) as [string, string];
const config = JSON.parse(configJson) as {
  appId: string;
  serverUrl: string;
  publicKeys: { keys: never[] };
  fingerprintSalt: string;
  cacheDir: string;
  tokenFile: string;
  device: string;
};

async function start(): Promise<string> {
  if (mode === 'sdk') {
    const { createLicenseClient } = await import('../../runtime-sdk/index.js');
    const license = await createLicenseClient({ ...config, appVersion: '1.0.0' });
    const { state } = await license.check();
    const elapsed = performance.now() - started;
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
    return JSON.stringify({ ms: elapsed, state, afterMs, memoryProtection });
  }
  if (mode === 'bare') {
    const { readFile } = await import('node:fs/promises');
    const { verifyRuntimeToken } = await import('../../runtime-sdk/protocol.js');
    const token = (await readFile(config.tokenFile, 'utf8')).trim();
    const claims = verifyRuntimeToken(token, config.publicKeys, { appId: config.appId, device: config.device, nowSeconds: Date.now() / 1000 });
    return JSON.stringify({ ms: performance.now() - started, state: claims.sub ? 'valid' : 'invalid' });
  }
  const { computeFingerprint } = await import('../../runtime-sdk/fingerprint/index.js');
  const { hostPlatform } = await import('../../runtime-sdk/platform.js');
  const { complete } = await computeFingerprint({ salt: config.fingerprintSalt, platform: hostPlatform, timeoutMs: 3000 });
  return JSON.stringify({ ms: performance.now() - started, state: complete ? 'complete' : 'incomplete' });
}

process.stdout.write(`${await start()}\n`);
