/**
 * Issue 20 item 5: how long a command-line app takes to exit after its last line, with the SDK
 * while the authority accepts the connection and never answers (its start-up refresh in flight),
 * against the same app without the SDK. Both are the same esbuild-bundled program in fresh
 * processes; the time runs from the last line arriving on stdout to the process's exit.
 */
import fs from 'node:fs';
import path from 'node:path';
import { systemClock } from '../../runtime-sdk/clock.js';
import { FakeAuthority } from '../sdk/support/fake-authority.js';
import { tempDir } from '../sdk/support/fake-machine.js';
import { startNetworkApp, type AppRun } from '../sdk/support/network-app-process.js';
import { SilentServer } from '../sdk/support/silent-server.js';
import { defineBench } from './lib.js';
import { REPO_ROOT } from './processes.js';
import { bundleSdkScript } from './sdk-bundle.js';
import { sampleSummary } from './samples.js';

const BENCH = 'sdk-exit';
const SAMPLES = Number(process.env.BENCH_SDK_PROCESSES ?? 20);
const KEY = 'EX1T-2345-6789-ABCD';
/** The goal: the app is gone within 50 ms of its last line (median), as an app without the SDK is. */
const GOAL_MS = 50;

/** The app without the SDK: the same lines, the same wait for stdin. */
const BARE_APP = `process.stdout.write('valid\\nwaiting\\n'); for await (const _ of process.stdin); process.stdout.write('last line\\n');\n`;

export default defineBench({
  title: 'runtime SDK exit: a command-line app from its last line to exit, the authority never answering, vs the same app without the SDK',
  async run(ctx) {
    const progress = (message: string) => process.stderr.write(`  ${BENCH}: ${message}\n`);
    const outdir = path.join(REPO_ROOT, 'test/.artifacts/bench-sdk-exit');
    fs.mkdirSync(outdir, { recursive: true });
    const sdkApp = [await bundleSdkScript(path.join(REPO_ROOT, 'test/sdk/support/network-app.ts'), outdir)];
    const bareApp = [path.join(outdir, 'bare-app.mjs')];
    fs.writeFileSync(bareApp[0]!, BARE_APP);

    const authority = await new FakeAuthority(systemClock).start();
    const silent = await new SilentServer().start();
    try {
      authority.addLicense(KEY);
      const options = {
        appId: authority.appId,
        publicKeys: authority.publicKeys,
        fingerprintSalt: 'salt-exit',
        appVersion: '1.0.0',
        cacheDir: tempDir('latchkey-bench-exit-'),
        memoryProtection: 'masked',
        startupDelayMs: 0,
      };
      const activation = startNetworkApp({ action: 'activate', options: { ...options, serverUrl: authority.url }, key: KEY }, {}, sdkApp);
      await activation.line('valid');
      await activation.exit(30_000);

      /** One run: the app starts, its request hangs at the silent server (SDK only), it ends; ms from its last line to its exit. */
      const exitAfterLastLine = async (program: string[], run: AppRun, waitForRequest: boolean): Promise<number> => {
        const before = silent.connections;
        const app = startNetworkApp(run, {}, program);
        await app.line('waiting');
        while (waitForRequest && silent.connections === before) await new Promise((resolve) => setTimeout(resolve, 5));
        app.child.stdin.end();
        const lastLine = await app.line('last line');
        const exit = await app.exit(60_000);
        if (exit === 'still running' || exit.code !== 0) throw new Error(`the app did not exit cleanly: ${app.output()}`);
        return exit.at - lastLine;
      };
      const start: AppRun = { action: 'start', options: { ...options, serverUrl: silent.url } };
      progress(`${SAMPLES} runs each, alternating (SDK with its request hanging, the app without the SDK)`);
      const sdk: number[] = [];
      const bare: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        sdk.push(await exitAfterLastLine(sdkApp, start, true));
        bare.push(await exitAfterLastLine(bareApp, start, false));
      }
      const sdkRow = sampleSummary(BENCH, 'last line to exit, authority never answering', 'with the SDK', sdk);
      const bareRow = sampleSummary(BENCH, 'last line to exit, authority never answering', 'without the SDK', bare);
      ctx.record([sdkRow, bareRow]);
      ctx.expect({
        name: 'last line to exit with the SDK (median), vs without',
        wanted: `< ${GOAL_MS} ms`,
        measured: `p50 ${sdkRow.p50Ms.toFixed(1)} vs ${bareRow.p50Ms.toFixed(1)} ms, p99 ${sdkRow.p99Ms.toFixed(1)} vs ${bareRow.p99Ms.toFixed(1)} ms, ratio (p50) ${(sdkRow.p50Ms / bareRow.p50Ms).toFixed(2)}`,
        met: sdkRow.p50Ms < GOAL_MS,
      });
    } finally {
      await silent.close();
      await authority.close();
    }
  },
});
