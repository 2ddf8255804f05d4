// The portal's only way to the API: same-origin calls to /portal/api/v1/..., which the server
// forwards with the session's bearer token. The browser never sees a token, only the CSRF token
// that every call carries in X-CSRF-Token.

let csrfToken = '';
let onSignedOut = () => {};

export function setCsrfToken(token) {
  csrfToken = token ?? '';
}

export function whenSignedOut(handler) {
  onSignedOut = handler;
}

/** A refused request: status, the API's `detail`, `error_code` and `reason`, and Retry-After. */
export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.detail ?? `The server answered ${status}`);
    this.status = status;
    this.code = body?.error_code ?? null;
    this.reason = body?.reason ?? null;
    this.retryAfter = retryAfter ? Number(retryAfter) : null;
  }
}

async function parse(res) {
  const text = await res.text();
  if (!text) return null;
  if ((res.headers.get('content-type') ?? '').includes('json')) return JSON.parse(text);
  return text;
}

/** A portal endpoint (`/portal/session/...`) or an API path (`/v1/...`, forwarded). */
export async function request(method, path, body) {
  const url = path.startsWith('/v1/') ? `/portal/api${path}` : path;
  const headers = { Accept: 'application/json', 'X-CSRF-Token': csrfToken };
  const init = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, init);
  const data = await parse(res);
  if (!res.ok) {
    // The session ended (not a wrong code or password, which are 401s too).
    if (res.status === 401 && data?.error_code === 'UNAUTHORIZED') onSignedOut();
    throw new ApiError(res.status, data, res.headers.get('Retry-After'));
  }
  return { data, total: Number(res.headers.get('X-Total-Count') ?? 'NaN'), headers: res.headers };
}

export const get = (path) => request('GET', path).then((r) => r.data);
export const post = (path, body) => request('POST', path, body).then((r) => r.data);
export const put = (path, body) => request('PUT', path, body).then((r) => r.data);
export const del = (path) => request('DELETE', path).then((r) => r.data);

/**
 * A multipart upload through the proxy with upload progress (fetch has none): `onProgress(sent,
 * total)`. The server streams the body on to the API without buffering it.
 */
export function upload(method, path, formData, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, `/portal/api${path}`);
    xhr.setRequestHeader('X-CSRF-Token', csrfToken);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.addEventListener('progress', (e) => onProgress(e.loaded, e.lengthComputable ? e.total : null));
    xhr.addEventListener('load', () => {
      let data;
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
export async function requestFile(method, path, body, accept) {
  const headers = { Accept: accept, 'X-CSRF-Token': csrfToken };
  const init = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`/portal/api${path}`, init);
  if (!res.ok) {
    const data = await parse(res);
    if (res.status === 401 && data?.error_code === 'UNAUTHORIZED') onSignedOut();
    throw new ApiError(res.status, data, res.headers.get('Retry-After'));
  }
  const name = /filename="?([^";]+)"?/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? 'download';
  return { blob: await res.blob(), name };
}

/** Saves a Blob as a file download. */
export function saveBlob(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

/** Why the 409 reasons happen and what to do, in words; the API's own `detail` follows. */
const REASONS = {
  build_not_released: 'This build is not released, and the app delivers released builds only. Release it first, or tick “Release it now”.',
  active_push_target: 'This build is the target of the active update push. Clear or replace the push before withdrawing its release.',
  push_target_not_released: 'The active update push targets a build that is not released. Release it (tick “Release the pushed build too”) or clear the push first.',
  older_than_active_target: 'This build is older than the target of the active push. Clear the active push first if you really want to go back.',
};

/** The words shown next to the control that failed. */
export function describeError(err) {
  if (!(err instanceof ApiError)) return `Something went wrong: ${err?.message ?? err}`;
  const parts = [];
  if (err.reason) parts.push(REASONS[err.reason] ?? `Refused (${err.reason}).`);
  parts.push(err.message);
  if (err.status === 429 && err.retryAfter) parts.push(`Try again in ${err.retryAfter} seconds.`);
  return parts.join('\n');
}

/**
 * Runs `action` for a form or button: disables `button` meanwhile, shows the failure in `errorEl`
 * (the form keeps what was typed), or `notice` on success. Answers `{ ok, value }`.
 */
export async function act(action, { button, errorEl, noticeEl, notice } = {}) {
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
