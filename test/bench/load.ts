import autocannon from 'autocannon';
import type { Service } from './processes.js';

/** What every request of a load run sends. */
export interface RequestSpec {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  /** A JSON body, the same for every request. */
  body?: unknown;
  /** A JSON body built for each request, e.g. a new device every time. */
  bodyPerRequest?: () => unknown;
}

export interface LoadShape {
  connections: number;
  warmupSeconds: number;
  /** Measured seconds per service, split into `rounds` runs. */
  durationSeconds: number;
  rounds: number;
  /** Paces the requests at this many per second overall instead of as fast as possible. */
  overallRate?: number;
}

export interface LoadSummary {
  requestsPerSecond: number;
  /** Mean of the rounds' medians. */
  p50Ms: number;
  /** Worst of the rounds' 99th percentiles. */
  p99Ms: number;
  requests: number;
  failed: number;
  serverCpuMsPerRequest: number;
}

/**
 * Warms each service up, then loads them in alternating rounds (A B A B ...): a machine shared
 * with other work slows whichever runs while it is busy, and alternating spreads that over all.
 */
export async function loadAlternating(services: Service[], request: RequestSpec, shape: LoadShape): Promise<LoadSummary[]> {
  for (const service of services) await load(service.url, request, shape.warmupSeconds, shape);
  const roundSeconds = Math.max(1, Math.round(shape.durationSeconds / shape.rounds));
  const rounds: { result: autocannon.Result; cpuSeconds: number }[][] = services.map(() => []);
  for (let round = 0; round < shape.rounds; round++) {
    for (const [i, service] of services.entries()) {
      const cpuBefore = service.cpuSeconds();
      const result = await load(service.url, request, roundSeconds, shape);
      rounds[i]!.push({ result, cpuSeconds: service.cpuSeconds() - cpuBefore });
    }
  }
  return rounds.map(summarise);
}

function summarise(runs: { result: autocannon.Result; cpuSeconds: number }[]): LoadSummary {
  const sum = (f: (run: (typeof runs)[number]) => number) => runs.reduce((n, run) => n + f(run), 0);
  const requests = sum((r) => r.result.requests.total);
  return {
    requestsPerSecond: requests / sum((r) => r.result.duration),
    p50Ms: sum((r) => r.result.latency.p50) / runs.length,
    p99Ms: Math.max(...runs.map((r) => r.result.latency.p99)),
    requests,
    failed: sum((r) => r.result.non2xx + r.result.errors),
    serverCpuMsPerRequest: (sum((r) => r.cpuSeconds) * 1000) / requests,
  };
}

function load(url: string, request: RequestSpec, seconds: number, shape: LoadShape): Promise<autocannon.Result> {
  const { bodyPerRequest } = request;
  const hasBody = request.body !== undefined || bodyPerRequest !== undefined;
  return autocannon({
    url: `${url}${request.path}`,
    method: request.method ?? 'GET',
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...request.headers },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
    requests: bodyPerRequest ? [{ setupRequest: (req) => ({ ...req, body: JSON.stringify(bodyPerRequest()) }) }] : undefined,
    connections: shape.connections,
    duration: seconds,
    overallRate: shape.overallRate,
    // autocannon paces each connection per second (its share sent back to back, then a pause) and
    // "corrects" paced latencies with an expected interval of ceil(1 / rate) = 1 ms, which adds a
    // sample for every millisecond a response took: it would weigh slow responses many times over.
    ignoreCoordinatedOmission: shape.overallRate !== undefined,
  });
}
