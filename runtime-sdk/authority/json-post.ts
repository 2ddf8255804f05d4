/**
 * One JSON POST with node:http(s), retried with backoff on network errors and the 5xx answers a
 * proxy or a restarting server gives. No HTTP library: the SDK ships inside every app and bundles
 * into ES modules and CommonJS alike, which the CommonJS dependency trees of HTTP libraries break.
 */
import type http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProxyEnv } from '../network/proxy-rules.js';
import { loadWire } from '../network/wire.js';

export interface JsonPostOptions {
  headers: Record<string, string>;
  /** Per attempt, from the request to the last byte of the answer. */
  timeoutMs: number;
  retryLimit: number;
  retryBaseDelayMs: number;
  /** Where `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` are read. */
  env: ProxyEnv;
  /** Ends the request and any retry at once (the client was disposed). */
  signal: AbortSignal;
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** The request never got an answer (refused, reset, timed out, name not resolved, aborted: `ABORT_ERR`); `code` is Node's. */
export class NetworkError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'NetworkError';
  }
}

const RETRY_STATUS_CODES = new Set([500, 502, 503, 504, 521, 522, 524]);
const RETRY_ERROR_CODES = new Set(['ETIMEDOUT', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ENOTFOUND', 'ENETUNREACH', 'EHOSTUNREACH', 'EAI_AGAIN']);
const MAX_RETRY_DELAY_MS = 10_000;
/** The authority's answers are a few kilobytes; more is not an answer worth reading. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** The last answer (any status) after retries, or the last network failure as a NetworkError. */
export async function postJson(url: URL, body: object, options: JsonPostOptions): Promise<HttpAnswer> {
  const payload = JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    const last = attempt >= options.retryLimit;
    try {
      const answer = await postOnce(url, payload, options);
      if (last || !RETRY_STATUS_CODES.has(answer.status)) return answer;
    } catch (err) {
      if (last || !(err instanceof NetworkError) || !RETRY_ERROR_CODES.has(err.code)) throw err;
    }
    await sleep(retryDelay(attempt, options.retryBaseDelayMs), undefined, { signal: options.signal, ref: false }).catch(() => {
      throw new NetworkError('ABORT_ERR', 'the request was aborted');
    });
  }
}

/** Doubling from the base, capped, with a little jitter so a fleet of apps does not retry in step. */
function retryDelay(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** attempt, MAX_RETRY_DELAY_MS) + Math.random() * baseMs * 0.25;
}

async function postOnce(url: URL, payload: string, options: JsonPostOptions): Promise<HttpAnswer> {
  const { http, https, agents } = await loadWire();
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const fail = (code: string, message: string) => reject(new NetworkError(code, `${code}: ${message}`));
    if (options.signal.aborted) return fail('ABORT_ERR', 'the request was aborted');
    let agent: http.Agent | undefined;
    try {
      agent = agents.agentFor(url, { env: options.env, holdsProcess: false });
    } catch (err) {
      if (err instanceof agents.ProxyError) return fail(err.code, err.message);
      throw err;
    }
    const request = transport.request(url, {
      method: 'POST',
      headers: { ...options.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      ...(agent ? { agent } : {}),
    });
    // Nothing here keeps the process alive: a call the app awaits holds it (process-hold.ts).
    request.once('socket', (socket) => socket.unref());
    // The deadline and the abort settle the call themselves: a request still waiting for its socket
    // (a proxy that took the connection and never answers CONNECT) emits no error when destroyed.
    const giveUp = (err: NetworkError) => {
      settle();
      request.destroy(err);
      reject(err);
    };
    const timer = setTimeout(() => giveUp(new NetworkError('ETIMEDOUT', `no answer within ${options.timeoutMs} ms`)), options.timeoutMs).unref();
    const onAbort = () => giveUp(new NetworkError('ABORT_ERR', 'ABORT_ERR: the request was aborted'));
    options.signal.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      agent?.destroy();
    };
    request.once('error', (err: NodeJS.ErrnoException) => {
      settle();
      if (err instanceof NetworkError) reject(err);
      else fail(err.code ?? 'ECONNABORTED', err.message);
    });
    request.once('response', (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) request.destroy(new NetworkError('ECONNABORTED', `the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(chunk);
      });
      response.once('end', () => {
        settle();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      response.once('error', () => undefined);
    });
    request.end(payload);
  });
}
