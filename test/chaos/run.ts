/**
 * `npm run test:chaos`: the reliability and abuse harness. It runs every scenario against a
 * Latchkey server in its own process and a PostgreSQL of its own (both on loopback), injects the
 * faults, and prints a figure sheet. Bounded: each scenario has a fixed size and time, and the run
 * stops by itself; it exits 1 when a 5xx other than an outage's 503, a lost acknowledged write or
 * a broken invariant was seen. CHAOS_SEED=<n> replays a run's shuffles.
 */
import { startFakeStripe } from '../support/fake-stripe.js';
import { client } from '../support/http.js';
import { startChaosDatabase, startLatchkeyProcess } from './environment.js';
import { FigureSheet } from './figures.js';
import { seededRandom } from '../support/random.js';
import { activationStorm } from './scenarios/activation-storm.js';
import { badInputSweep } from './scenarios/bad-input.js';
import { databaseRestart } from './scenarios/database-restart.js';
import { entitlementStorm } from './scenarios/entitlement-storm.js';
import { forgerySuite } from './scenarios/forgery.js';
import { tenantFairness } from './scenarios/tenant-fairness.js';
import { tenantIsolationSweep } from './scenarios/tenant-isolation.js';
import { paymentWebhookStorm } from './scenarios/webhook-storm.js';
import { seedSweepWorld } from './sweep-world.js';

/** The whole run's ceiling: a hung scenario fails the run instead of holding CI. */
const RUN_LIMIT_MS = 8 * 60_000;

async function main(): Promise<number> {
  const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const random = seededRandom(seed);
  const sheet = new FigureSheet();
  const started = Date.now();
  const progress = (message: string) => process.stderr.write(`chaos: ${message} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);

  progress(`seed ${seed}; starting PostgreSQL, a fake Stripe and the server`);
  const database = await startChaosDatabase();
  const stripe = await startFakeStripe();
  const server = await startLatchkeyProcess(database.url, stripe.env);
  try {
    const scenarios: [string, () => Promise<void>][] = [
      ['activation storm', () => activationStorm(sheet, database, server, random)],
      ['payment webhook storm', () => paymentWebhookStorm(sheet, database, server, stripe, random)],
      ['entitlement webhook storm', () => entitlementStorm(sheet, database, server, random)],
      ['database restart under load', () => databaseRestart(sheet, database, server)],
      [
        'token and manifest forgeries against the SDK',
        async () => {
          const { tried, accepted } = await forgerySuite(sheet, server);
          sheet.figures.set('forged or replayed tokens and manifests judged', tried);
          sheet.figures.set('forgeries accepted', accepted);
        },
      ],
      ['tenant fairness: one tenant floods 200 protection jobs', () => tenantFairness(sheet, database, server)],
      [
        'tenant isolation sweep',
        async () => {
          const world = await seedSweepWorld(client(server.url), server.adminToken, 'Tenant sweep');
          const { operations, requests, leaks } = await tenantIsolationSweep(sheet, server, world);
          sheet.figures.set("operations called with another developer's ids", `${operations} (${requests} requests)`);
          sheet.figures.set('tenant leaks (answers other than 404)', leaks);
        },
      ],
      [
        'bad input sweep of every operation',
        async () => {
          sheet.sweptRoutes = await badInputSweep(sheet, server, await seedSweepWorld(client(server.url), server.adminToken, 'Bad input sweep'));
          sheet.figures.set('bad input requests', `${[...sheet.sweptRoutes.values()].reduce((a, b) => a + b, 0)} over ${sheet.sweptRoutes.size} operations`);
        },
      ],
    ];
    for (const [name, run] of scenarios) {
      progress(name);
      await run();
    }
  } finally {
    await server.stop().catch(() => {});
    await stripe.close();
    await database.remove();
  }
  printSheet(sheet, seed, Date.now() - started);
  return sheet.passed ? 0 : 1;
}

function printSheet(sheet: FigureSheet, seed: number, elapsedMs: number): void {
  const rows: [string, number | string][] = [
    ['requests tried', sheet.requests],
    ['faults injected', sheet.faults],
    ['5xx answers (besides 503 during an outage)', sheet.serverErrors],
    ['503 answers during an outage', sheet.unavailableAnswers],
    ['connections refused or cut (killed server)', sheet.networkFailures],
    ['lost acknowledged writes', sheet.lostWrites],
    ['invariant violations', sheet.violations],
    ...sheet.figures,
    ['seed', seed],
    ['seconds', (elapsedMs / 1000).toFixed(0)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = ['', 'Latchkey chaos figure sheet', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)];
  lines.push('', 'Bad input sweep: requests tried per route');
  for (const [route, n] of [...sheet.sweptRoutes].sort(([a], [b]) => a.localeCompare(b))) lines.push(`  ${String(n).padStart(7)}  ${route}`);
  lines.push('', 'Notes', ...sheet.notes.map((line) => `  ${line}`), '', sheet.passed ? 'PASSED' : 'FAILED', '');
  process.stdout.write(lines.join('\n'));
}

const limit = setTimeout(() => {
  console.error(`chaos: the run passed its ${RUN_LIMIT_MS / 60_000}-minute limit`);
  process.exit(1);
}, RUN_LIMIT_MS);
limit.unref();

// Exits once the sheet is written out: a piped stdout is flushed asynchronously.
const exit = (code: number) => process.stdout.write('', () => process.exit(code));
main().then(
  (code) => exit(code),
  (err) => {
    console.error(err);
    exit(1);
  },
);
