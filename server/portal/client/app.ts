// Latchkey developer portal: one page, hash routing (#/apps/app_x/builds), TypeScript bundled by
// esbuild into /portal/assets/portal.js. Every action goes through the public API via the
// same-origin proxy (api.ts). See server/portal/index.ts for the server half.
import { describeError, portal, setCsrfToken, whenSignedOut } from './api.js';
import { h, mount } from './dom.js';
import { appPage } from './page-app.js';
import { appsPage } from './page-apps.js';
import { dashboardPage } from './page-dashboard.js';
import { licensePage, licensesPage } from './page-licenses.js';
import { byId, type Page } from './page.js';
import { settingsPage } from './page-settings.js';
import { signInPage } from './page-signin.js';

interface Session {
  signed_in: boolean;
  two_factor_pending?: boolean;
  csrf_token: string;
}

const main = byId('main');
const nav = byId('nav');
let signedIn = false;

const ROUTES: [RegExp, Page][] = [
  [/^\/$/, dashboardPage],
  [/^\/apps$/, appsPage],
  [/^\/apps\/([\w-]+)(?:\/(\w+))?$/, appPage],
  [/^\/licenses$/, licensesPage],
  [/^\/licenses\/([\w-]+)$/, licensePage],
  [/^\/settings$/, settingsPage],
];

async function refreshSession(): Promise<Session> {
  const session = await portal.get<Session>('/portal/session');
  setCsrfToken(session.csrf_token);
  signedIn = session.signed_in;
  return session;
}

/** Renders the route of the current hash into a fresh view; a view replaced meanwhile is simply detached. */
async function render(): Promise<void> {
  const hash = location.hash.slice(1) || '/';
  const [path = '/', query] = hash.split('?');
  const view = h('div', { class: 'view' });
  mount(main, view);
  if (!signedIn) {
    nav.hidden = true;
    const session = await refreshSession();
    if (!session.signed_in) {
      signInPage(view, { twoFactorPending: session.two_factor_pending, onSignedIn });
      return;
    }
  }
  nav.hidden = false;
  for (const a of nav.querySelectorAll('a')) {
    const target = (a.getAttribute('href') ?? '#').slice(1);
    a.classList.toggle('active', target === '/' ? path === '/' : path.startsWith(target));
  }
  const route = ROUTES.find(([re]) => re.test(path));
  if (!route) {
    mount(view, h('h1', null, 'Not found'), h('p', null, h('a', { href: '#/' }, 'Back to the dashboard')));
    return;
  }
  mount(view, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const [pattern, page] = route;
    await page(view, { params: (pattern.exec(path) ?? []).slice(1), query: new URLSearchParams(query ?? '') });
  } catch (err) {
    if (view.isConnected) mount(view, h('p', { class: 'error', role: 'alert' }, describeError(err)));
  }
}

function onSignedIn(result: { csrf_token: string }): void {
  setCsrfToken(result.csrf_token);
  signedIn = true;
  if (location.hash === '' || location.hash === '#/signin') location.hash = '#/';
  else render();
}

whenSignedOut(() => {
  if (!signedIn) return;
  signedIn = false;
  render();
});

byId('sign-out').addEventListener('click', async () => {
  try {
    const result = await portal.post<{ csrf_token: string }>('/portal/session/logout');
    setCsrfToken(result.csrf_token);
  } finally {
    signedIn = false;
    location.hash = '#/';
    render();
  }
});

window.addEventListener('hashchange', render);
render();
