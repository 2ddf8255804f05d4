import { assertSecretTransport, type Settings } from './config.js';
import { ApiError, CliError, EXIT, exitCodeForStatus, SIGN_IN_HINT } from './errors.js';
import { multipartBody, type MultipartUpload } from './multipart-body.js';

export interface ApiResponse {
  body: unknown;
  headers: Headers;
}

export interface ApiClient {
  request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<ApiResponse>;
  /** A multipart/form-data request whose file streams from disk, reporting progress. */
  upload(method: 'POST' | 'PUT', path: string, upload: MultipartUpload): Promise<ApiResponse>;
  /** A PUT of raw bytes (`application/octet-stream`): a chunk of a resumable upload. */
  putBytes(path: string, bytes: Uint8Array<ArrayBuffer>): Promise<ApiResponse>;
}

/** fetch, with a refused connection or a bad address said as what it is. */
export async function reach(url: string, init: RequestInit): Promise<Response> {
  try {
    // Node's fetch needs `duplex` to send a streamed body.
    return await fetch(url, { ...init, ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}) });
  } catch (err) {
    // fetch says only "fetch failed"; the cause says why (ECONNREFUSED, ENOTFOUND, a certificate).
    const { cause, message } = err as Error;
    const why = cause instanceof Error ? cause.message : (cause ?? message);
    throw new CliError(`cannot reach ${new URL(url).origin}: ${why}; is the server running at that address?`, EXIT.UNREACHABLE);
  }
}

/** A status that says the server (or the proxy in front of it) failed for now: worth another try. */
export const isTransient = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** The API's error body `{ detail, error_code }` said as `detail (ERROR_CODE)`, with the exit code of its status. */
export function apiError(status: number, body: unknown): ApiError {
  const { detail, error_code } = (body ?? {}) as { detail?: unknown; error_code?: unknown };
  let message = typeof detail === 'string' && typeof error_code === 'string' ? `${detail} (${error_code})` : `HTTP ${status}`;
  if (status === 401) message += `: ${SIGN_IN_HINT}`;
  return new ApiError(message, exitCodeForStatus(status), body, status);
}

async function jsonBody(res: Response, url: string): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${new URL(url).origin} answered HTTP ${res.status} with a body that is not JSON: is that the Latchkey API's address?`);
  }
}

/**
 * The API at `settings().url`, called with its API key; settings are read on first use, so `--help`
 * needs none. The key goes only where the settings say: never over plain http to another machine
 * unless allowed (assertSecretTransport), and never on to where a redirect points, which fetch would
 * do with this header (it drops only `Authorization` and cookies on another origin).
 */
export function apiClient(settings: () => Settings): ApiClient {
  async function send(method: string, path: string, headers: Record<string, string>, body: RequestInit['body']): Promise<ApiResponse> {
    const { url: base, apiKey, allowHttp } = settings();
    assertSecretTransport(base, allowHttp, 'the API key', `set LATCHKEY_ALLOW_HTTP=1, or sign in again with \`latchkey login --url ${base} --allow-http\``);
    const url = `${base}${path}`;
    const res = await reach(url, { method, headers: { 'x-api-key': apiKey, ...headers }, body, redirect: 'manual' });
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get('location') ?? 'elsewhere';
      throw new CliError(`${new URL(url).origin} redirects to ${to}: the API key is not sent on. Sign in at the address the API answers at (latchkey login --url)`, EXIT.USAGE);
    }
    // A proxy's own error page while the server restarts (5xx, 408, 429) is an HTTP error to retry,
    // not a wrong address; any other page that is not JSON still says the address may be wrong.
    const parsed = isTransient(res.status) ? await jsonBody(res, url).catch(() => undefined) : await jsonBody(res, url);
    if (!res.ok) throw apiError(res.status, parsed);
    return { body: parsed, headers: res.headers };
  }

  return {
    request: (method, path, body) => send(method, path, body === undefined ? {} : { 'content-type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body)),

    async upload(method, path, upload) {
      settings();
      const { contentType, length, body } = await multipartBody(upload);
      return send(method, path, { 'content-type': contentType, 'content-length': String(length) }, body);
    },

    putBytes: (path, bytes) => send('PUT', path, { 'content-type': 'application/octet-stream' }, bytes),
  };
}
