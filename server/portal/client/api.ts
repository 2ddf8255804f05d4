// The portal's only way to the API: same-origin calls to /portal/api/v1/..., which the server
// forwards with the session's bearer token. The browser never sees a token, only the CSRF token
// that every call carries in X-CSRF-Token. Every API call is typed by the OpenAPI document's
// generated types (api-schema.d.ts): a path, parameter, body field or answer field the API does
// not have is a type error.
import type { paths } from './api-schema.js';

let csrfToken = '';
let onSignedOut = () => {};

export function setCsrfToken(token: string | null | undefined): void {
  csrfToken = token ?? '';
}

export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

interface ErrorBody {
  detail?: string;
  error_code?: string;
  reason?: string;
}

/** A refused request: status, the API's `detail`, `error_code` and `reason`, and Retry-After. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | null;
  readonly reason: string | null;
  readonly retryAfter: number | null;

  constructor(status: number, body: ErrorBody | null, retryAfter?: string | null) {
    super(body?.detail ?? `The server answered ${status}`);
    this.status = status;
    this.code = body?.error_code ?? null;
    this.reason = body?.reason ?? null;
    this.retryAfter = retryAfter ? Number(retryAfter) : null;
  }
}

async function parse(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return null;
  if ((res.headers.get('content-type') ?? '').includes('json')) return JSON.parse(text);
  return text;
}

/** A portal endpoint (`/portal/session/...`) or an API path (`/v1/...`, forwarded). */
async function request(method: string, path: string, body?: unknown): Promise<{ data: unknown; total: number; headers: Headers }> {
  const url = path.startsWith('/v1/') ? `/portal/api${path}` : path;
  const headers: Record<string, string> = { Accept: 'application/json', 'X-CSRF-Token': csrfToken };
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, init);
  const data = await parse(res);
  if (!res.ok) {
    const error = data as ErrorBody | null;
    // The session ended (not a wrong code or password, which are 401s too).
    if (res.status === 401 && error?.error_code === 'UNAUTHORIZED') onSignedOut();
    throw new ApiError(res.status, error, res.headers.get('Retry-After'));
  }
  return { data, total: Number(res.headers.get('X-Total-Count') ?? 'NaN'), headers: res.headers };
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
/** The API paths that answer method M. */
export type PathOf<M extends Method> = { [P in keyof paths]: [NonNullable<paths[P][M]>] extends [never] ? never : P extends `/v1/${string}` ? P : never }[keyof paths];
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : null;
/** The body of the operation's success answer (its 200, 201 or 202; null when it has none). */
export type Answer<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: infer R }
    ? R extends { 200: infer A }
      ? JsonOf<A>
      : R extends { 201: infer A }
        ? JsonOf<A>
        : R extends { 202: infer A }
          ? JsonOf<A>
          : null
    : never;
/** The operation's JSON request body. */
export type Body<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Params<P extends keyof paths, M extends Method> = Operation<P, M> extends { parameters: infer Q } ? Q : never;
type PathParams<P extends keyof paths, M extends Method> = Params<P, M> extends { path: infer A } ? A : never;
type QueryParams<P extends keyof paths, M extends Method> = Params<P, M> extends { query?: infer A } ? A : never;
/** What a call needs besides its path: the path's parameters when it has any, and its query when it takes one. */
export type CallOptions<P extends keyof paths, M extends Method> = ([PathParams<P, M>] extends [never] ? { path?: never } : { path: PathParams<P, M> }) &
  ([QueryParams<P, M>] extends [never] ? { query?: never } : { query?: QueryParams<P, M> });
type OptionalIfEmpty<P extends keyof paths, M extends Method> = [PathParams<P, M>] extends [never] ? [options?: CallOptions<P, M>] : [options: CallOptions<P, M>];

/** `/v1/licenses/{license_id}` with its parameters in place, and the query string. */
export function apiUrl(template: string, options?: unknown): string {
  const { path: params = {}, query: search = {} } = (options ?? {}) as { path?: Record<string, unknown>; query?: Record<string, unknown> };
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${template}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(search)) if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  return query.size ? `${path}?${query}` : path;
}

/** The most rows a list endpoint answers at once. */
const LIST_PAGE = 100;

/** The typed API: `api.get('/v1/licenses/{license_id}', { path: { license_id } })`. */
export const api = {
  get: <P extends PathOf<'get'>>(path: P, ...[options]: OptionalIfEmpty<P, 'get'>): Promise<Answer<P, 'get'>> =>
    request('GET', apiUrl(path, options)).then((r) => r.data as Answer<P, 'get'>),
  /** A page of a list: its rows and the X-Total-Count of all of them. */
  list: <P extends PathOf<'get'>>(path: P, ...[options]: OptionalIfEmpty<P, 'get'>): Promise<{ data: Answer<P, 'get'>; total: number }> =>
    request('GET', apiUrl(path, options)) as Promise<{ data: Answer<P, 'get'>; total: number }>,
  /** Every row of a list endpoint, page by page (the API answers at most 100 a page). */
  async all<P extends PathOf<'get'>>(path: P, ...[options]: OptionalIfEmpty<P, 'get'>): Promise<Answer<P, 'get'>> {
    const given = (options ?? {}) as { path?: object; query?: object };
    const rows: unknown[] = [];
    for (let offset = 0; ; offset += LIST_PAGE) {
      const page = await request('GET', apiUrl(path, { ...given, query: { ...given.query, limit: LIST_PAGE, offset } }));
      const data = page.data as unknown[];
      rows.push(...data);
      if (data.length < LIST_PAGE || rows.length >= page.total) return rows as unknown as Answer<P, 'get'>;
    }
  },
  post: <P extends PathOf<'post'>>(path: P, body: Body<P, 'post'> | undefined, ...[options]: OptionalIfEmpty<P, 'post'>): Promise<Answer<P, 'post'>> =>
    request('POST', apiUrl(path, options), body).then((r) => r.data as Answer<P, 'post'>),
  put: <P extends PathOf<'put'>>(path: P, body: Body<P, 'put'>, ...[options]: OptionalIfEmpty<P, 'put'>): Promise<Answer<P, 'put'>> =>
    request('PUT', apiUrl(path, options), body).then((r) => r.data as Answer<P, 'put'>),
  patch: <P extends PathOf<'patch'>>(path: P, body: Body<P, 'patch'>, ...[options]: OptionalIfEmpty<P, 'patch'>): Promise<Answer<P, 'patch'>> =>
    request('PATCH', apiUrl(path, options), body).then((r) => r.data as Answer<P, 'patch'>),
  delete: <P extends PathOf<'delete'>>(path: P, ...[options]: OptionalIfEmpty<P, 'delete'>): Promise<Answer<P, 'delete'>> =>
    request('DELETE', apiUrl(path, options)).then((r) => r.data as Answer<P, 'delete'>),
};

/** The portal's own endpoints (/portal/session/...), which are not API operations. */
export const portal = {
  get: <T>(path: `/portal/${string}`): Promise<T> => request('GET', path).then((r) => r.data as T),
  post: <T>(path: `/portal/${string}`, body?: unknown): Promise<T> => request('POST', path, body).then((r) => r.data as T),
};

/**
 * A multipart upload through the proxy with upload progress (fetch has none): `onProgress(sent,
 * total)`. The server streams the body on to the API without buffering it.
 */
export function upload(method: string, path: string, formData: FormData, onProgress: (sent: number, total: number | null) => void): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, `/portal/api${path}`);
    xhr.setRequestHeader('X-CSRF-Token', csrfToken);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (e) => onProgress(e.loaded, e.lengthComputable ? e.total : null));
    xhr.addEventListener('load', () => {
      let data: ErrorBody | null;
      try {
        data = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        data = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data);
      else {
        if (xhr.status === 401 && data?.error_code === 'UNAUTHORIZED') onSignedOut();
        reject(new ApiError(xhr.status, data, xhr.getResponseHeader('Retry-After')));
      }
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, { detail: 'The upload was interrupted: check the connection and try again' })));
    xhr.send(formData);
  });
}

/**
 * A request whose answer is a file (a CSV: `accept`), held as a Blob with the server's file name:
 * the page saves it when the user asks (saveBlob).
 */
export async function requestFile(method: string, path: string, body: unknown, accept: string): Promise<{ blob: Blob; name: string }> {
  const headers: Record<string, string> = { Accept: accept, 'X-CSRF-Token': csrfToken };
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`/portal/api${path}`, init);
  if (!res.ok) {
    const data = (await parse(res)) as ErrorBody | null;
    if (res.status === 401 && data?.error_code === 'UNAUTHORIZED') onSignedOut();
    throw new ApiError(res.status, data, res.headers.get('Retry-After'));
  }
  const name = /filename="?([^";]+)"?/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? 'download';
  return { blob: await res.blob(), name };
}

/** Saves a Blob as a file download. */
export function saveBlob(blob: Blob, name: string): void {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/** Why the 409 reasons happen and what to do, in words; the API's own `detail` follows. */
const REASONS: Record<string, string> = {
  build_not_released: 'This build is not released, and the app delivers released builds only. Release it first, or tick “Release it now”.',
  active_push_target: 'This build is the target of the active update push. Clear or replace the push before withdrawing its release.',
  push_target_not_released: 'The active update push targets a build that is not released. Release it (tick “Release the pushed build too”) or clear the push first.',
  older_than_active_target: 'This build is older than the target of the active push. Clear the active push first if you really want to go back.',
};

/** The words shown next to the control that failed. */
export function describeError(err: unknown): string {
  if (!(err instanceof ApiError)) return `Something went wrong: ${err instanceof Error ? err.message : String(err)}`;
  const parts: string[] = [];
  if (err.reason) parts.push(REASONS[err.reason] ?? `Refused (${err.reason}).`);
  parts.push(err.message);
  if (err.status === 429 && err.retryAfter) parts.push(`Try again in ${err.retryAfter} seconds.`);
  return parts.join('\n');
}

/**
 * Runs `action` for a form or button: disables `button` meanwhile, shows the failure in `errorEl`
 * (the form keeps what was typed), or `notice` on success. Answers `{ ok, value }`.
 */
export interface ActOptions<T> {
  button?: HTMLButtonElement | null;
  errorEl?: HTMLElement | null;
  noticeEl?: HTMLElement | null;
  notice?: string | ((result: T) => string);
}

export async function act<T>(action: () => Promise<T>, { button, errorEl, noticeEl, notice }: ActOptions<T> = {}): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  if (button) button.disabled = true;
  if (errorEl) errorEl.textContent = '';
  if (noticeEl) noticeEl.textContent = '';
  try {
    const result = await action();
    if (noticeEl && notice) noticeEl.textContent = typeof notice === 'function' ? notice(result) : notice;
    return { ok: true, value: result };
  } catch (err) {
    if (errorEl) errorEl.textContent = describeError(err);
    else console.error(err);
    return { ok: false, error: err };
  } finally {
    if (button) button.disabled = false;
  }
}
