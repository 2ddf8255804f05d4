/**
 * Forwards normalized entitlement decisions to a Latchkey entitlement webhook, as docs/contract.md asks of a
 * broker: a 2xx means the decision is durably saved; 400, 401 and 404 are permanent (never
 * retried); a 5xx, a network failure or a timeout is retried after about 2 seconds, a bounded
 * number of times. Dependency-free: Node's fetch only.
 */

/** What the broker sends: the fields of docs/contract.md's entitlement webhook table. */
export interface EntitlementDecision {
  app: string;
  shop: string;
  entitled: boolean;
  event_id: string;
  occurred_at: string;
  topic?: string;
  status?: string;
  subscription_name?: string;
  trial?: boolean;
  test?: boolean;
  customer_email?: string;
  source?: string;
  subscription_gid?: string;
  shop_gid?: string;
  order_gid?: string;
  order_number?: string;
}

export interface BrokerOptions {
  /** The app's {webhook_url}, shown once when the webhook was enabled. */
  webhookUrl: string;
  /** Its secret, sent as X-MerchantOps-Secret. */
  secret: string;
  /** Wait before a retry; docs/contract.md: about 2 seconds. */
  retryWaitMs?: number;
  /** Attempts in all, the first included. */
  maxAttempts?: number;
  /** A request that takes longer is abandoned and retried. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** Told about each failed attempt that will be retried. */
  onRetry?: (attempt: number, reason: string) => void;
}

export interface Delivery {
  /** The service answered 2xx: saved. */
  delivered: boolean;
  /** The last HTTP status, or null when no answer came (network failure, timeout). */
  status: number | null;
  body: unknown;
  attempts: number;
  /** Why it stopped undelivered: a permanent refusal, or the attempts ran out. */
  failure?: 'permanent' | 'exhausted';
}

export const DEFAULT_RETRY_WAIT_MS = 2000;
export const DEFAULT_MAX_ATTEMPTS = 5;
export const DEFAULT_TIMEOUT_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createBroker(options: BrokerOptions) {
  const webhookUrl = options.webhookUrl.replace(/\/+$/, '');
  const retryWaitMs = options.retryWaitMs ?? DEFAULT_RETRY_WAIT_MS;
  const maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const doFetch = options.fetch ?? fetch;

  /** One request with the secret; retried on 5xx, network failures and timeouts only. */
  async function request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Delivery> {
    let last: Delivery = { delivered: false, status: null, body: undefined, attempts: 0 };
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      let reason: string;
      try {
        const res = await doFetch(`${webhookUrl}${path}`, {
          method,
          headers: { 'x-merchantops-secret': options.secret, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await res.text();
        const parsed: unknown = text && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
        last = { delivered: res.ok, status: res.status, body: parsed, attempts: attempt };
        if (res.ok) return last;
        // 4xx: a bad payload, a wrong secret, a wrong URL, a conflict: retrying cannot help.
        if (res.status < 500) return { ...last, failure: 'permanent' };
        reason = `HTTP ${res.status}`;
      } catch (err) {
        last = { delivered: false, status: null, body: undefined, attempts: attempt };
        reason = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : String(err);
      }
      if (attempt < maxAttempts) {
        options.onRetry?.(attempt, reason);
        await sleep(retryWaitMs);
      }
    }
    return { ...last, failure: 'exhausted' };
  }

  return {
    /** POST {webhook_url}: one decision. Reusing its event_id on retries is what makes them safe. */
    forward: (decision: EntitlementDecision) => request('POST', '', decision),
    entitlement: (shop: string, app?: string) => request('GET', `/entitlement?${new URLSearchParams({ shop, ...(app ? { app } : {}) })}`),
    deliveryEmail: (shop: string, email: string | null, app?: string) => request('POST', '/delivery-email', { shop, email, ...(app ? { app } : {}) }),
    trial: (body: { shop: string; event_id: string; occurred_at: string; app?: string }) => request('POST', '/trial', body),
    redact: (body: { shop: string; app: string; force?: boolean }) => request('POST', '/redact', body),
    resetDevices: (body: { shop: string; app: string }) => request('POST', '/reset-devices', body),
  };
}

export type Broker = ReturnType<typeof createBroker>;
