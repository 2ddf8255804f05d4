import http from 'node:http';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { databaseCpuSecondsBetween, databaseCpuSnapshot, type Service } from './processes.js';

/** What every request of a load run sends. */
export interface RequestSpec {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  /** A JSON body, the same for every request. */
  body?: unknown;
  /** A JSON body built for each request, e.g. a new device every time. */
  bodyPerRequest?: () => unknown;
  /** Headers that depend on that body, e.g. a signature over it. */
  headersPerRequest?: (body: string) => Record<string, string>;
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
  /** PostgreSQL's CPU per request, all its processes (databaseCpuSecondsBetween); NaN where not measured. */
  databaseCpuMsPerRequest: number;
}

/** What one round of load on one service measured. */
interface Round {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

/**
 * Warms each service up, then loads them in alternating rounds (A B A B ...): a machine shared
 * with other work slows whichever runs while it is busy, and alternating spreads that over all.
 */
export async function loadAlternating(services: Service[], request: RequestSpec, shape: LoadShape): Promise<LoadSummary[]> {
  for (const service of services) await load(service, request, shape.warmupSeconds, shape);
  const roundSeconds = Math.max(1, Math.round(shape.durationSeconds / shape.rounds));
  const rounds: Measured[][] = services.map(() => []);
  for (let i = 0; i < shape.rounds; i++) {
    for (const [s, service] of services.entries()) {
      const cpuBefore = service.cpuSeconds();
      const databaseBefore = databaseCpuSnapshot();
      const round = await load(service, request, roundSeconds, shape);
      rounds[s]!.push({ round, cpuSeconds: service.cpuSeconds() - cpuBefore, databaseCpuSeconds: databaseCpuSecondsBetween(databaseBefore, databaseCpuSnapshot()) });
    }
  }
  return rounds.map(summarise);
}

interface Measured {
  round: Round;
  cpuSeconds: number;
  databaseCpuSeconds: number;
}

function summarise(runs: Measured[]): LoadSummary {
  const sum = (f: (run: (typeof runs)[number]) => number) => runs.reduce((n, run) => n + f(run), 0);
  const requests = sum((r) => r.round.requests);
  return {
    requestsPerSecond: requests / sum((r) => r.round.seconds),
    p50Ms: sum((r) => r.round.p50Ms) / runs.length,
    p99Ms: Math.max(...runs.map((r) => r.round.p99Ms)),
    requests,
    failed: sum((r) => r.round.failed),
    serverCpuMsPerRequest: (sum((r) => r.cpuSeconds) * 1000) / requests,
    databaseCpuMsPerRequest: (sum((r) => r.databaseCpuSeconds) * 1000) / requests,
  };
}

const bodyOf = (request: RequestSpec) =>
  request.bodyPerRequest ? JSON.stringify(request.bodyPerRequest()) : request.body === undefined ? undefined : JSON.stringify(request.body);

/**
 * One round on a service; on several instances (`urls`), the connections and the rate split evenly
 * between them at once, as clients spread by DNS or a balancer would be. Their rounds add up: the
 * median is the mean of theirs (they see the same load), the 99th percentile the worst.
 */
async function load(service: Service, request: RequestSpec, seconds: number, shape: LoadShape): Promise<Round> {
  const urls = service.urls ?? [service.url];
  const connections = Math.max(1, Math.round(shape.connections / urls.length));
  const rounds = await Promise.all(
    urls.map((url) => (shape.overallRate === undefined ? flatOut(url, request, seconds, connections) : paced(url, request, seconds, connections, shape.overallRate / urls.length))),
  );
  return {
    requests: rounds.reduce((n, r) => n + r.requests, 0),
    seconds: Math.max(...rounds.map((r) => r.seconds)),
    p50Ms: rounds.reduce((n, r) => n + r.p50Ms, 0) / rounds.length,
    p99Ms: Math.max(...rounds.map((r) => r.p99Ms)),
    failed: rounds.reduce((n, r) => n + r.failed, 0),
  };
}

/** As fast as the service answers: each of the connections sends its next request on the last answer. */
async function flatOut(url: string, request: RequestSpec, seconds: number, connections: number): Promise<Round> {
  const hasBody = request.body !== undefined || request.bodyPerRequest !== undefined;
  const result = await autocannon({
    url: `${url}${request.path}`,
    method: request.method ?? 'GET',
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...request.headers },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
    requests: request.bodyPerRequest
      ? [
          {
            setupRequest: (req) => {
              const body = bodyOf(request)!;
              return { ...req, body, headers: { ...req.headers, ...request.headersPerRequest?.(body) } };
            },
          },
        ]
      : undefined,
    connections,
    duration: seconds,
  });
  return {
    requests: result.requests.total,
    seconds: result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failed: result.non2xx + result.errors,
  };
}

/**
 * Requests sent at an even pace, one every 1/rate seconds, on whichever of the connections is free
 * (a new one up to `connections`), as many independent clients would. autocannon's overallRate
 * does not do this: each connection sends its per-second quota back to back at the start of every
 * second, then idles, so "half the peak rate" is the peak for half of each second, and the latency
 * it records is mostly the queue of those bursts, the load generator's doing, not the server's.
 * Each latency runs from when its request was due, so a request waiting for a connection (a server
 * falling behind) still shows in it.
 */
async function paced(url: string, request: RequestSpec, seconds: number, connections: number, rate: number): Promise<Round> {
  const target = new URL(`${url}${request.path}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  let failed = 0;
  const pending = new Set<Promise<void>>();

  const send = (due: number) => {
    const body = bodyOf(request);
    const headers = {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...request.headers,
      ...(body === undefined ? {} : request.headersPerRequest?.(body)),
    };
    const done = new Promise<void>((resolve) => {
      const req = http.request({ agent, host: target.hostname, port: target.port, path: target.pathname + target.search, method: request.method ?? 'GET', headers }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - due);
          if (res.statusCode! < 200 || res.statusCode! >= 300) failed++;
          resolve();
        });
      });
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(body);
    });
    pending.add(done);
    void done.then(() => pending.delete(done));
  };

  const intervalMs = 1000 / rate;
  const total = Math.round(seconds * rate);
  const start = performance.now();
  await new Promise<void>((resolve) => {
    let sent = 0;
    // A 1 ms tick sends every request that has fallen due: at most a millisecond late, or a few
    // at once after a stall of the generator itself.
    const timer = setInterval(() => {
      const now = performance.now();
      for (; sent < total && start + sent * intervalMs <= now; sent++) send(start + sent * intervalMs);
      if (sent >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  await Promise.all(pending);
  const elapsedSeconds = (performance.now() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const percentile = (q: number) => latencies[Math.max(0, Math.ceil(q * latencies.length) - 1)] ?? Number.NaN;
  return { requests: latencies.length, seconds: elapsedSeconds, p50Ms: percentile(0.5), p99Ms: percentile(0.99), failed };
}
