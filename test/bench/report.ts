import type { LoadSummary } from './load.js';

/** What one case measured on one service. */
export interface Measurement extends LoadSummary {
  bench: string;
  /** What was measured, e.g. `GET /v1/apps`. */
  case: string;
  /** `latchkey` or `baseline`, plus the offered rate when the load was paced. */
  target: string;
}

/** A target from the issues and whether this run met it. */
export interface Goal {
  bench: string;
  name: string;
  wanted: string;
  measured: string;
  met: boolean;
}

const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : '-');

/**
 * The CPU column is the server's per request for load rows, the measured process's per run for
 * sampled ones (samples.ts); the DB CPU column is PostgreSQL's per request, for load rows.
 */
export function measurementTable(rows: Measurement[]): string {
  return table(
    ['bench', 'case', 'target', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'failed', 'CPU ms/req', 'DB CPU ms/req'],
    rows.map((m) => [
      m.bench,
      m.case,
      m.target,
      fixed(m.requestsPerSecond, 0),
      fixed(m.p50Ms, 1),
      fixed(m.p99Ms, 1),
      String(m.requests),
      String(m.failed),
      fixed(m.serverCpuMsPerRequest, 3),
      fixed(m.databaseCpuMsPerRequest, 3),
    ]),
    [false, false, false, true, true, true, true, true, true, true],
  );
}

export function goalTable(goals: Goal[]): string {
  return table(
    ['bench', 'goal', 'wanted', 'measured', 'met'],
    goals.map((g) => [g.bench, g.name, g.wanted, g.measured, g.met ? 'yes' : 'NO']),
    [false, false, true, true, false],
  );
}

/** A plain-text table; `numeric` columns are right-aligned. */
function table(headers: string[], rows: string[][], numeric: boolean[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
