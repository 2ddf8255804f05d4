export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  token?: string;
  apiKey?: string;
  body?: unknown;
  /** Sent as is, with the given content type (malformed JSON, wrong types). */
  raw?: { data: string | Buffer; contentType: string };
  headers?: Record<string, string>;
}

/** A thin client over fetch that returns status, parsed body and headers, never throwing on 4xx/5xx. */
export function client(baseUrl: string) {
  return async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.apiKey) headers['x-api-key'] = opts.apiKey;
    let body: string | Buffer | undefined;
    if (opts.raw) {
      body = opts.raw.data;
      headers['content-type'] = opts.raw.contentType;
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
}

export type Call = ReturnType<typeof client>;
