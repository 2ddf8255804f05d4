import { client, type ApiResponse, type CallOptions } from '../support/http.js';
import type { FigureSheet } from './figures.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Wait before each retry. */
  waitMs: number;
  /** Whether an answer is retried; network failures and timeouts always are. */
  retryStatus(status: number): boolean;
}

/** docs/contract.md's senders: 5xx and timeouts are retried after a wait, 4xx never. */
export const retryServerErrors = (attempts: number, waitMs: number): RetryPolicy => ({ attempts, waitMs, retryStatus: (s) => s >= 500 });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A killed server can leave a connection hanging: no request waits longer than this by default. */
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * HTTP to the server under test, every request counted on the figure sheet under its route name
 * (the OpenAPI path template). A network failure (refused, reset, timed out) answers undefined.
 */
export function chaosClient(sheet: FigureSheet, baseUrl: string) {
  const call = client(baseUrl);

  async function send<T = any>(route: string, method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T> | undefined> {
    try {
      const answer = await call<T>(method, path, { timeoutMs: DEFAULT_TIMEOUT_MS, ...opts });
      sheet.count(route, answer.status);
      return answer;
    } catch {
      sheet.count(route, undefined);
      return undefined;
    }
  }

  /** `send` until an answer the policy does not retry, or the attempts are spent (then the last answer, or undefined). */
  async function sendWithRetries<T = any>(route: string, method: string, path: string, opts: CallOptions, policy: RetryPolicy): Promise<ApiResponse<T> | undefined> {
    let answer: ApiResponse<T> | undefined;
    for (let attempt = 1; attempt <= policy.attempts; attempt++) {
      answer = await send<T>(route, method, path, opts);
      if (answer && !policy.retryStatus(answer.status)) return answer;
      if (attempt < policy.attempts) await sleep(policy.waitMs);
    }
    return answer;
  }

  return { send, sendWithRetries };
}

export type ChaosClient = ReturnType<typeof chaosClient>;

/**
 * Sends every item with `deliver`, `concurrency` at a time, and kills the server (SIGKILL, then a
 * restart on the same address) when `killAfter` of them have started: the storms' shape.
 */
export async function deliverThroughACrash<T>(
  sheet: FigureSheet,
  server: { restart(): Promise<void> },
  items: T[],
  options: { concurrency: number; killAfter: number; fault: string },
  deliver: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let crash: Promise<void> | undefined;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      if (next === options.killAfter) {
        const over = sheet.fault(options.fault);
        crash = server.restart().finally(over);
      }
      await deliver(item);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  await crash;
}
