import type { Measurement } from './report.js';

/**
 * Timings taken one at a time (starts, imports), summarised in the harness's table format: req/s reads
 * "runs/s"; the CPU column, given `cpuMs` (CPU time of each run), is the mean per run.
 */
export function sampleSummary(bench: string, caseName: string, target: string, samples: number[], cpuMs?: number[]): Measurement {
  const sorted = [...samples].sort((a, b) => a - b);
  const total = samples.reduce((a, b) => a + b, 0);
  return {
    bench,
    case: caseName,
    target,
    requestsPerSecond: (samples.length * 1000) / total,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    requests: samples.length,
    failed: 0,
    serverCpuMsPerRequest: cpuMs?.length ? cpuMs.reduce((a, b) => a + b, 0) / cpuMs.length : Number.NaN,
    databaseCpuMsPerRequest: Number.NaN,
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function timed<T>(work: () => Promise<T>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** CPU time (user + system) this process spent since `since`, in ms. */
export function cpuMsSince(since: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(since);
  return (user + system) / 1000;
}

/** Wall-clock and CPU time of one run in this process. */
export async function timedWithCpu<T>(work: () => Promise<T>): Promise<{ ms: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await work();
  return { ms: performance.now() - started, cpuMs: cpuMsSince(cpu) };
}
