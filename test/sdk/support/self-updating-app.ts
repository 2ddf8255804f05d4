/**
 * The body of a small app that updates itself for real: v1 and v2 are one-line `app.mjs` files in a
 * temporary install folder that call `runVersion`. It activates against the test's authority,
 * starts the updater (answering Install now), and writes what it saw to the result file; v1 never
 * gets there, because the updater replaces it and starts v2 with the same arguments in its place.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createLicenseClient } from '../../../runtime-sdk/index.js';
import { createUpdater } from '../../../runtime-sdk/updates/index.js';

export interface SelfUpdateConfig {
  serverUrl: string;
  appId: string;
  publicKeys: { keys: object[] };
  key: string;
  dataDir: string;
  resultFile: string;
  /** Each instance answers only once `parties` instances are at the question (files in `dir`): they race from there. */
  barrier?: { dir: string; parties: number };
  /** The new version reads a line of its stdin, prints it and exits with this code. */
  echoStdinThenExit?: number;
}

const BARRIER_POLLS = 400;
const BARRIER_POLL_MS = 25;

/** Install now, once every party of the barrier is asking too (bounded: answers anyway after the polls). */
async function answerInstall(barrier: SelfUpdateConfig['barrier']): Promise<'install'> {
  if (!barrier) return 'install';
  fs.writeFileSync(path.join(barrier.dir, `asking-${process.pid}`), '');
  for (let i = 0; i < BARRIER_POLLS && fs.readdirSync(barrier.dir).length < barrier.parties; i++) {
    await new Promise((resolve) => setTimeout(resolve, BARRIER_POLL_MS));
  }
  return 'install';
}

async function echoOneLine(): Promise<void> {
  const lines = createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    process.stdout.write(`read from stdin: ${line}\n`);
    break;
  }
  lines.close();
}

export async function runVersion(version: string, buildId: string): Promise<void> {
  const config = JSON.parse(process.env.LATCHKEY_SELF_UPDATE ?? '{}') as SelfUpdateConfig;
  const args = process.argv.slice(2);
  process.stdout.write(`${version} running with ${JSON.stringify(args)}\n`);
  const license = await createLicenseClient({
    appId: config.appId,
    serverUrl: config.serverUrl,
    publicKeys: config.publicKeys as never,
    fingerprintSalt: 'salt-self-update',
    appVersion: version,
    buildId,
    cacheDir: config.dataDir,
    refreshOnStart: false,
    memoryProtection: 'masked',
    retryLimit: 0,
  });
  if (!(await license.check()).usable) await license.activate(config.key);
  const updater = createUpdater({ license, appName: 'Notes', prompt: { ask: () => answerInstall(config.barrier) }, retryBaseDelayMs: 10, holdProcess: true });
  const started = await updater.start();
  const outcome = await updater.checkInBackground();
  fs.writeFileSync(config.resultFile, JSON.stringify({ version, args, cwd: process.cwd(), started, outcome: outcome.status }));
  updater.dispose();
  await license.dispose();
  if (config.echoStdinThenExit !== undefined && outcome.status === 'no-update') {
    await echoOneLine();
    process.exitCode = config.echoStdinThenExit;
  }
}
