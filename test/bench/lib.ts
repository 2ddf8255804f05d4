/**
 * The bench harness. A bench is one file `test/bench/<name>.bench.ts` that default-exports
 * `defineBench({ title, run })`; `run` starts what it needs (`startLatchkey`, `startBaseline`),
 * seeds data through the API, calls `measure` on the same requests for Latchkey and its baseline,
 * and states the goals (`expectRatio`, `expectP99Below`). A baseline is a small
 * `test/bench/baselines/<name>.ts` built on `serveBaseline`. `run.ts` gives each bench a fresh
 * database, stops its processes afterwards and prints every measurement and goal.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { client, type ApiResponse, type Call } from '../support/http.js';
import { loadAlternating, type RequestSpec } from './load.js';
import { spawnService, type Service } from './processes.js';
import type { Goal, Measurement } from './report.js';

export type { RequestSpec } from './load.js';
export type { Service } from './processes.js';
export type { Goal, Measurement } from './report.js';

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

/** Load shape shared by every bench; the environment overrides it for a quick or a long run. */
export const settings = {
  connections: envNumber('BENCH_CONNECTIONS', 16),
  warmupSeconds: envNumber('BENCH_WARMUP', 3),
  durationSeconds: envNumber('BENCH_DURATION', 12),
  rounds: envNumber('BENCH_ROUNDS', 3),
};

/**
 * The hot paths' goals (the hot-paths issue): a runtime path (activation, refresh, update check,
 * listings) at 0.9 of its bare baseline's throughput in the same run, a sale path (fulfilment,
 * redemption, the entitlement webhook) at 0.8, and p99 under 25 ms at half the peak rate. Written
 * once, so the goal table shows every path against the same bar and a regression in one run.
 */
export const HOT_PATH_GOALS = { runtimeRatio: 0.9, saleRatio: 0.8, halfPeakP99Ms: 25 } as const;

export interface LatchkeyService extends Service {
  adminToken: string;
  /** A fetch-based client for seeding data through the API. */
  call: Call;
}

export interface BenchContext {
  /** A fresh, migrated database that only this bench uses. */
  databaseUrl: string;
  /**
   * The compiled server (`server/dist/main.js`, what `npm start` runs; `npm run bench` builds it
   * first) in a child process on this bench's database; rate limits counted but never
   * reached. Every instance a bench starts shares the master key and signing keys, as instances of one service do.
   */
  startLatchkey(env?: Record<string, string>): Promise<LatchkeyService>;
  /** `test/bench/baselines/<name>.ts` in a child process, with DATABASE_URL set. */
  startBaseline(name: string, env?: Record<string, string>): Promise<Service>;
  /**
   * Loads the services with the same requests (after a warm-up, in alternating rounds) and records
   * one measurement per service, in the order given. With `overallRate`, requests leave evenly
   * spaced at that rate instead of as fast as the service answers (see `paced` in load.ts).
   */
  measure(caseName: string, services: Service[], request: RequestSpec, options?: { overallRate?: number }): Promise<Measurement[]>;
  /**
   * A hot path held to HOT_PATH_GOALS: Latchkey and its baseline at full load (goal: the throughput
   * ratio of the path's kind), then both at half Latchkey's peak, evenly paced (goal: Latchkey's
   * p99). Answers the full-load measurements, Latchkey's first.
   */
  measureHotPath(caseName: string, services: [Service, Service], request: RequestSpec, kind: 'runtime' | 'sale'): Promise<[Measurement, Measurement]>;
  /** Goal: Latchkey's throughput is at least `min` times the baseline's. */
  expectRatio(name: string, latchkey: Measurement, baseline: Measurement, min: number): void;
  /** Goal: the 99th percentile latency stays under `maxMs`. */
  expectP99Below(name: string, measurement: Measurement, maxMs: number): void;
  /** Measurements taken another way (not HTTP load), so they join the printed table. */
  record(measurements: Omit<Measurement, 'bench'>[]): void;
  /** A goal of another kind. */
  expect(goal: Omit<Goal, 'bench'>): void;
}

export interface Bench {
  title: string;
  run(ctx: BenchContext): Promise<void>;
}

/** A bench file default-exports `defineBench({...})`; `run.ts` finds every `*.bench.ts` here. */
export const defineBench = (bench: Bench): Bench => bench;

/** Seeding helper: the response when it has the expected status, else an error that shows the body. */
export function expectStatus<T>(res: ApiResponse<T>, status: number, what: string): ApiResponse<T> {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** High enough that no bench reaches a limit, while every request still counts in PostgreSQL. */
const RATE_LIMIT_MULTIPLIER = '1000000';

export interface BenchRun {
  context: BenchContext;
  measurements: Measurement[];
  goals: Goal[];
  /** Stops the bench's processes and removes its temporary files. */
  close(): Promise<void>;
}

export function createBenchRun(bench: string, databaseUrl: string): BenchRun {
  const measurements: Measurement[] = [];
  const goals: Goal[] = [];
  const cleanups: (() => Promise<void> | void)[] = [];
  const progress = (message: string) => process.stderr.write(`  ${bench}: ${message}\n`);
  const keys = {
    LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
    LATCHKEY_SIGNING_KEYS: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
  };

  async function start(name: string, entry: string, env: Record<string, string>): Promise<Service> {
    progress(`starting ${name}`);
    const service = await spawnService(name, entry, { DATABASE_URL: databaseUrl, ...env });
    cleanups.unshift(service.stop);
    return service;
  }

  const goal = (name: string, wanted: string, measured: string, met: boolean, runs: Measurement[]) => {
    const failed = runs.reduce((n, m) => n + m.failed, 0);
    goals.push({ bench, name, wanted, measured: failed ? `${measured} (${failed} failed requests)` : measured, met: met && !failed });
  };

  const context: BenchContext = {
    databaseUrl,

    async startLatchkey(env = {}) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-bench-data-'));
      cleanups.unshift(() => fs.rmSync(dataDir, { recursive: true, force: true }));
      const adminToken = randomBytes(24).toString('hex');
      const service = await start('latchkey', 'server/dist/main.js', {
        LATCHKEY_DATA_DIR: dataDir,
        ...keys,
        LATCHKEY_ADMIN_TOKEN: adminToken,
        LATCHKEY_RATE_LIMIT_MULTIPLIER: RATE_LIMIT_MULTIPLIER,
        LOG_LEVEL: 'warn',
        ...env,
      });
      return { ...service, adminToken, call: client(service.url) };
    },

    startBaseline: (name, env = {}) => start('baseline', `test/bench/baselines/${name}.ts`, env),

    async measure(caseName, services, request, options = {}) {
      const paced = options.overallRate ? ` at ${Math.round(options.overallRate)} req/s` : '';
      const names = services.map((s) => s.name).join(', ');
      progress(`${caseName}${paced} on ${names}: ${settings.warmupSeconds} s warm-up, then ${settings.durationSeconds} s each in ${settings.rounds} alternating rounds`);
      const summaries = await loadAlternating(services, request, { ...settings, overallRate: options.overallRate });
      const results = summaries.map((summary, i): Measurement => ({ bench, case: caseName, target: `${services[i]!.name}${paced}`, ...summary }));
      measurements.push(...results);
      return results;
    },

    async measureHotPath(caseName, services, request, kind) {
      const [ours, base] = (await context.measure(caseName, services, request)) as [Measurement, Measurement];
      context.expectRatio(`${caseName} throughput vs baseline`, ours, base, kind === 'runtime' ? HOT_PATH_GOALS.runtimeRatio : HOT_PATH_GOALS.saleRatio);
      // The baseline at the same rate too, no goal attached: on a shared machine, its p99 shows how
      // much of Latchkey's is the machine's (other processes, PostgreSQL's own flushes).
      const [paced] = await context.measure(caseName, services, request, { overallRate: ours.requestsPerSecond / 2 });
      context.expectP99Below(`${caseName} p99 at half the peak rate`, paced!, HOT_PATH_GOALS.halfPeakP99Ms);
      return [ours, base];
    },

    expectRatio(name, latchkey, baseline, min) {
      const ratio = latchkey.requestsPerSecond / baseline.requestsPerSecond;
      goal(name, `ratio >= ${min.toFixed(2)}`, ratio.toFixed(2), ratio >= min, [latchkey, baseline]);
    },

    expectP99Below(name, m, maxMs) {
      goal(name, `p99 < ${maxMs} ms`, `${m.p99Ms.toFixed(1)} ms`, m.p99Ms < maxMs, [m]);
    },

    record: (taken) => measurements.push(...taken.map((m) => ({ bench, ...m }))),

    expect: (g) => goals.push({ bench, ...g }),
  };

  return {
    context,
    measurements,
    goals,
    async close() {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    },
  };
}
