export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** What fetch sends as is; `Buffer.from(...)` qualifies. */
type RawBody = string | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>;

export interface CallOptions {
  token?: string;
  apiKey?: string;
  body?: unknown;
  /** Sent as is, with the given content type (malformed JSON, wrong types); a stream goes chunked. */
  raw?: { data: RawBody; contentType: string };
  headers?: Record<string, string>;
  /** Aborts the request (fetch rejects) after this long. */
  timeoutMs?: number;
}

/** The request's body, `raw` as is or `body` as JSON, with its content type set in `headers`. */
export function requestBody(opts: Pick<CallOptions, 'raw' | 'body'>, headers: Record<string, string>): RawBody | undefined {
  if (opts.raw) {
    headers['content-type'] = opts.raw.contentType;
    return opts.raw.data;
  }
  if (opts.body === undefined) return undefined;
  headers['content-type'] = 'application/json';
  return JSON.stringify(opts.body);
}

/** A thin client over fetch that returns status, parsed body and headers, never throwing on 4xx/5xx. */
export function client(baseUrl: string) {
  const call = async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.apiKey) headers['x-api-key'] = opts.apiKey;
    const body = requestBody(opts, headers);
    // Node's fetch needs `duplex` to send a streamed request body.
    const send = () =>
      fetch(`${baseUrl}${path}`, {
        method,
        headers,
        body,
        ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
        ...(opts.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(opts.timeoutMs) }),
      });
    // A kept-alive connection the server closes as the request goes out is reset; like a browser,
    // a read (GET, HEAD) is sent again once on a new connection.
    const res = await send().catch((err: Error & { cause?: { code?: string } }) => {
      if ((method === 'GET' || method === 'HEAD') && err.cause?.code === 'ECONNRESET') return send();
      throw err;
    });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
  /** The server it calls: for requests a test makes by hand (cookies, redirects not followed). */
  return Object.assign(call, { baseUrl });
}

export type Call = ReturnType<typeof client>;

/** A multipart/form-data body for `raw`: text fields and files, as a browser sends them. */
export function formData(fields: Record<string, string>, files: Record<string, { name: string; data: string | Buffer }> = {}) {
  const boundary = `form-${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const [name, file] of Object.entries(files)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${file.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`));
    parts.push(Buffer.from(file.data), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { data: new Uint8Array(Buffer.concat(parts)), contentType: `multipart/form-data; boundary=${boundary}` };
}
