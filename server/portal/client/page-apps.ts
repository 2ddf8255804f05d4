// Apps: the list and the form that registers a new one.
import { act, api, type Body } from './api.js';
import { dataTable, formatDate, h, mount } from './dom.js';

type Platform = Body<'/v1/apps', 'post'>['platforms'][number];
export const PLATFORMS: Platform[] = ['win-x64', 'win-arm64', 'linux-x64', 'linux-arm64', 'mac-x64', 'mac-arm64'];

export function platformBoxes(name: string, selected: string[]): HTMLElement {
  return h(
    'div',
    { class: 'platforms' },
    PLATFORMS.map((p) => h('label', { class: 'inline' }, h('input', { type: 'checkbox', name, value: p, checked: selected.includes(p) }), p)),
  );
}

export const checkedValues = (form: HTMLElement, name: string): string[] => [...form.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)].map((i) => i.value);

export async function appsPage(view: HTMLElement): Promise<void> {
  const apps = await api.all('/v1/apps');
  const name = h('input', { type: 'text', id: 'new-app-name', required: true, maxlength: 200 });
  const error = h('p', { class: 'error', role: 'alert', id: 'new-app-error' });
  const submit = h('button', { type: 'submit', id: 'new-app-submit' }, 'Create app');
  const form = h(
    'form',
    {
      id: 'new-app-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const res = await act(() => api.post('/v1/apps', { name: name.value, platforms: checkedValues(form, 'platforms') as Platform[] }), { button: submit, errorEl: error });
        if (res.ok) location.hash = `#/apps/${res.value.id}`;
      },
    },
    h('label', { for: 'new-app-name' }, 'Name'),
    name,
    h('label', null, 'Platforms'),
    platformBoxes('platforms', ['win-x64', 'mac-arm64']),
    h('div', { class: 'actions' }, submit),
    error,
  );

  mount(
    view,
    h('h1', null, 'Apps'),
    h(
      'section',
      { class: 'card' },
      apps.length === 0
        ? h('p', { class: 'muted' }, 'No apps yet. Register your first one below.')
        : dataTable(
            { id: 'apps-table' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Name', 'Platforms', 'Delivery', 'Price ID', 'Created'].map((t) => h('th', null, t)),
              ),
            ),
            h(
              'tbody',
              null,
              apps.map((a) =>
                h(
                  'tr',
                  { 'data-app-id': a.id },
                  h('td', null, h('a', { href: `#/apps/${a.id}` }, a.name)),
                  h('td', null, a.platforms.join(', ')),
                  h('td', null, a.delivery_mode === 'all' ? 'All builds' : 'Released only'),
                  h('td', { class: 'mono' }, a.price_id ?? '—'),
                  h('td', null, formatDate(a.created_at)),
                ),
              ),
            ),
          ),
    ),
    h('section', { class: 'card' }, h('h2', null, 'Register an app'), form),
  );
}
