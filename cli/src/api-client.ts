import { z } from 'zod';
import { multipartBody, type MultipartUpload } from './multipart-body.js';

const MISSING_API_KEY = 'is not set; create an API key in the portal or with POST /v1/auth/api-keys/rotate';

/** The CLI's settings come from the environment, like the server's; checked once, on first use. */
const CliEnv = z.object({
  LATCHKEY_URL: z.url({ error: 'must be a URL such as https://licenses.example.com' }).default('http://127.0.0.1:8080'),
  LATCHKEY_API_KEY: z.string({ error: MISSING_API_KEY }).min(1, MISSING_API_KEY),
});

const ErrorBody = z.object({ detail: z.string(), error_code: z.string() });

/** A failure to show the user as is: the server's detail, or what went wrong reaching it. */
export class CliError extends Error {}

export interface ApiResponse {
  body: unknown;
  headers: Headers;
}

export interface ApiClient {
  request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<ApiResponse>;
  /** A multipart/form-data request whose file streams from disk, reporting progress. */
  upload(method: 'POST' | 'PUT', path: string, upload: MultipartUpload): Promise<ApiResponse>;
}

export function apiClientFromEnv(env: Record<string, string | undefined>): ApiClient {
  let settings: z.infer<typeof CliEnv> | undefined;
  const configured = () => {
    if (!settings) {
      const parsed = CliEnv.safeParse(env);
      if (!parsed.success) throw new CliError(parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; '));
      settings = parsed.data;
    }
    return settings;
  };

  async function send(method: string, path: string, headers: Record<string, string>, body: RequestInit['body']): Promise<ApiResponse> {
    const { LATCHKEY_URL, LATCHKEY_API_KEY } = configured();
    const url = `${LATCHKEY_URL.replace(/\/+$/, '')}${path}`;
    let res: Response;
    try {
      // Node's fetch needs `duplex` to send a streamed body.
      res = await fetch(url, { method, headers: { 'x-api-key': LATCHKEY_API_KEY, ...headers }, body, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) });
    } catch (err) {
      throw new CliError(`cannot reach ${LATCHKEY_URL}: ${(err as Error).cause ?? (err as Error).message}`);
    }
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    if (!res.ok) {
      const error = ErrorBody.safeParse(parsed);
      throw new CliError(error.success ? `${error.data.detail} (${error.data.error_code})` : `HTTP ${res.status}`);
    }
    return { body: parsed, headers: res.headers };
  }

  return {
    request: (method, path, body) =>
      send(method, path, body === undefined ? {} : { 'content-type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body)),

    async upload(method, path, upload) {
      configured();
      const { contentType, length, body } = await multipartBody(upload);
      return send(method, path, { 'content-type': contentType, 'content-length': String(length) }, body);
    },
  };
}
