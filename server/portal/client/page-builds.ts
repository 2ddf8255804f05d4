// Builds: upload with progress, a list that follows QUEUED/PROCESSING builds until READY or
// FAILED, release and unrelease, replace with a signed package, download, delete.
import { act, api, apiUrl, describeError, upload, type Answer } from './api.js';
import { badge, confirmButton, dataTable, formatBytes, formatDate, h, mount } from './dom.js';

type App = Answer<'/v1/apps/{app_id}', 'get'>;
type Build = Answer<'/v1/apps/{app_id}/builds', 'get'>[number];
type BuildPath = { path: { app_id: string; build_id: string } };

const POLL_MS = 1500;
const settled = (b: Build) => b.status === 'READY' || b.status === 'FAILED';

/** A file input plus a progress bar; `send(file, onProgress)` does the upload. */
function uploadControls(idPrefix: string, label: string) {
  const progress = h('progress', { id: `${idPrefix}-progress`, max: 100, value: 0, hidden: true });
  const progressText = h('span', { class: 'hint', id: `${idPrefix}-progress-text` });
  return {
    progress,
    progressText,
    show(sent: number, total: number | null) {
      progress.hidden = false;
      if (total) {
        progress.value = Math.round((sent / total) * 100);
        progressText.textContent = ` ${label} ${formatBytes(sent)} of ${formatBytes(total)} (${progress.value}%)`;
      } else progressText.textContent = ` ${label} ${formatBytes(sent)}`;
    },
    done(text: string) {
      progress.hidden = true;
      progressText.textContent = text ? ` ${text}` : '';
    },
  };
}

export async function buildsTab(body: HTMLElement, app: App): Promise<void> {
  const where = { path: { app_id: app.id } };
  const error = h('p', { class: 'error', role: 'alert', id: 'build-upload-error' });
  const file = h('input', { type: 'file', id: 'build-file', name: 'artifact', required: true });
  const platform = h(
    'select',
    { id: 'build-platform' },
    [...app.platforms, 'cross_platform'].map((p) => h('option', { value: p }, p)),
  );
  const version = h('input', { type: 'text', id: 'build-version', placeholder: 'e.g. 1.4.2 (optional)' });
  const submit = h('button', { type: 'submit', id: 'build-upload' }, 'Upload');
  const controls = uploadControls('build-upload', 'Uploaded');
  const listCard = h('section', { class: 'card', id: 'builds' });
  const listError = h('p', { class: 'error', role: 'alert', id: 'builds-error' });

  const form = h(
    'form',
    {
      id: 'build-upload-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        if (!file.files?.[0]) {
          error.textContent = 'Choose the file to upload.';
          return;
        }
        const data = new FormData();
        data.append('platform', platform.value);
        if (version.value.trim()) data.append('version', version.value.trim());
        data.append('artifact', file.files[0]);
        const res = await act(() => upload('POST', apiUrl('/v1/apps/{app_id}/builds', where), data, controls.show), { button: submit, errorEl: error });
        controls.done(res.ok ? 'Uploaded: it is being scanned and protected.' : '');
        if (res.ok) refresh();
      },
    },
    h(
      'div',
      { class: 'grid' },
      h('div', null, h('label', { for: 'build-file' }, 'Artifact'), file),
      h('div', null, h('label', { for: 'build-platform' }, 'Platform'), platform),
      h('div', null, h('label', { for: 'build-version' }, 'Version'), version),
    ),
    h('div', { class: 'actions' }, submit, controls.progress, controls.progressText),
    error,
  );

  mount(body, h('section', { class: 'card' }, h('h2', null, 'Upload a build'), form), listCard);

  let timer: ReturnType<typeof setTimeout> | undefined;
  async function refresh(): Promise<void> {
    clearTimeout(timer);
    if (!body.isConnected) return;
    let builds: Build[];
    try {
      builds = await api.all('/v1/apps/{app_id}/builds', where);
    } catch (err) {
      listError.textContent = describeError(err);
      return;
    }
    if (!body.isConnected) return;
    renderList(builds);
    // Follows builds still being processed; stops once all settled or the page is left.
    if (builds.some((b) => !settled(b))) timer = setTimeout(refresh, POLL_MS);
  }

  function renderList(builds: Build[]) {
    const rows = [...builds].reverse().map((b) => buildRow(app, b, refresh));
    mount(
      listCard,
      h('h2', null, 'Builds'),
      listError,
      builds.length === 0
        ? h('p', { class: 'muted' }, 'No builds yet.')
        : dataTable(
            { id: 'builds-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Version', 'Platform', 'Status', 'Released', 'Size', 'Uploaded', ''].map((t) => h('th', null, t)),
              ),
            ),
            h('tbody', null, rows),
          ),
    );
  }

  await refresh();
}

function buildRow(app: App, b: Build, refresh: () => Promise<void>): HTMLTableRowElement {
  const error = h('p', { class: 'error', role: 'alert' });
  const where: BuildPath = { path: { app_id: app.id, build_id: b.id } };
  const run = (action: () => Promise<unknown>) => async () => {
    const res = await act(action, { errorEl: error });
    if (res.ok) refresh();
  };
  const actions = h('div', { class: 'actions' });
  if (b.status === 'READY') {
    actions.append(
      b.released
        ? h(
            'button',
            { type: 'button', class: 'secondary', 'data-action': 'unrelease', onclick: run(() => api.delete('/v1/apps/{app_id}/builds/{build_id}/release', where)) },
            'Unrelease',
          )
        : h('button', { type: 'button', 'data-action': 'release', onclick: run(() => api.post('/v1/apps/{app_id}/builds/{build_id}/release', undefined, where)) }, 'Release'),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'data-action': 'download',
          onclick: async () => {
            const res = await act(() => api.get('/v1/apps/{app_id}/builds/{build_id}/download', where), { errorEl: error });
            if (res.ok) location.assign(res.value.download_url);
          },
        },
        'Download',
      ),
    );
    // Windows and macOS builds are pushed once signed (Replace with Signed Package); the API says which take one.
    if (b.signature_format) actions.append(signedPackageControl(where, b.signature_format, error, refresh));
  }
  actions.append(
    confirmButton(
      'Delete',
      'Delete this build?',
      run(() => api.delete('/v1/apps/{app_id}/builds/{build_id}', where)),
    ),
  );
  const status = h('td', null, badge(b.status));
  if (b.status === 'FAILED' && b.failure_reason) status.append(h('p', { class: 'error' }, b.failure_reason));
  if (b.signed_package_at) status.append(h('p', { class: 'hint' }, 'Signed package'));
  if (b.status === 'READY' && b.awaits_signed_package) status.append(h('p', { class: 'hint', 'data-hint': 'unsigned' }, 'Not signed: Replace with Signed Package before pushing'));
  return h(
    'tr',
    { 'data-build-id': b.id, 'data-status': b.status },
    h('td', null, b.version ?? '—', h('div', { class: 'hint mono' }, b.package_name ?? b.artifact_name)),
    h('td', null, b.platform),
    status,
    h('td', null, b.released ? 'Yes' : 'No'),
    h('td', null, formatBytes(b.protected_size_bytes ?? b.artifact_size_bytes)),
    h('td', null, formatDate(b.created_at)),
    h('td', null, actions, error),
  );
}

/** Replace with Signed Package: picks the file (the build's download, signed), uploads it with progress. */
function signedPackageControl(where: BuildPath, format: string, error: HTMLElement, refresh: () => Promise<void>): HTMLElement {
  const controls = uploadControls('signed', 'Sent');
  const input = h('input', { type: 'file', hidden: true, 'data-action': 'signed-package-file' });
  const title = format === 'pe' ? 'Signed with signtool: an Authenticode signature' : 'Signed with codesign: LC_CODE_SIGNATURE';
  const button = h('button', { type: 'button', class: 'secondary', 'data-action': 'signed-package', title, onclick: () => input.click() }, 'Replace with Signed Package');
  input.addEventListener('change', async () => {
    const chosen = input.files?.[0];
    if (!chosen) return;
    const data = new FormData();
    data.append('package', chosen);
    const res = await act(() => upload('PUT', apiUrl('/v1/apps/{app_id}/builds/{build_id}/signed-package', where), data, controls.show), { button, errorEl: error });
    controls.done(res.ok ? 'Replaced.' : '');
    input.value = '';
    if (res.ok) refresh();
  });
  return h('span', null, button, input, controls.progress, controls.progressText);
}
