// Sign in (email and password, then a TOTP or backup code when 2FA is on), or create an account.
import { act, ApiError, portal } from './api.js';
import { h, mount } from './dom.js';

/** A portal sign-in step's answer: the session's CSRF token, or (after the password) that a code is needed. */
export interface SignedIn {
  csrf_token: string;
  two_factor_required?: boolean;
}
type OnSignedIn = (result: SignedIn) => void;

export function signInPage(view: HTMLElement, { twoFactorPending, onSignedIn }: { twoFactorPending?: boolean; onSignedIn: OnSignedIn }): void {
  const card = h('div', { class: 'card narrow' });
  mount(view, card);
  if (twoFactorPending) codeForm(card, onSignedIn);
  else passwordForm(card, onSignedIn);
}

function passwordForm(card: HTMLElement, onSignedIn: OnSignedIn): void {
  const email = h('input', { type: 'email', id: 'signin-email', name: 'email', autocomplete: 'username', required: true });
  const password = h('input', { type: 'password', id: 'signin-password', name: 'password', autocomplete: 'current-password', required: true });
  const error = h('p', { class: 'error', role: 'alert', id: 'signin-error' });
  const submit = h('button', { type: 'submit', id: 'signin-submit' }, 'Sign in');
  const form = h(
    'form',
    {
      id: 'signin-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const res = await act(() => portal.post<SignedIn>('/portal/session/login', { email: email.value, password: password.value }), { button: submit, errorEl: error });
        if (!res.ok) return;
        if (res.value.two_factor_required) codeForm(card, onSignedIn);
        else onSignedIn(res.value);
      },
    },
    h('label', { for: 'signin-email' }, 'Email'),
    email,
    h('label', { for: 'signin-password' }, 'Password'),
    password,
    h('div', { class: 'actions' }, submit),
    error,
  );
  mount(
    card,
    h('h1', null, 'Sign in to Latchkey'),
    form,
    h('p', { class: 'hint' }, h('a', { href: '/reset-password', id: 'forgot-password' }, 'Forgot your password?')),
    h('p', { class: 'hint' }, 'No account yet? ', h('button', { type: 'button', class: 'link', id: 'show-register', onclick: () => registerForm(card, onSignedIn) }, 'Create one')),
  );
  email.focus();
}

function codeForm(card: HTMLElement, onSignedIn: OnSignedIn): void {
  const code = h('input', { type: 'text', id: 'signin-code', name: 'code', autocomplete: 'one-time-code', inputmode: 'text', required: true });
  const error = h('p', { class: 'error', role: 'alert', id: 'signin-code-error' });
  const submit = h('button', { type: 'submit', id: 'signin-code-submit' }, 'Verify');
  const form = h(
    'form',
    {
      id: 'signin-code-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const res = await act(() => portal.post<SignedIn>('/portal/session/verify-2fa', { code: code.value }), { button: submit, errorEl: error });
        if (res.ok) onSignedIn(res.value);
        else if (res.error instanceof ApiError && res.error.code === 'INVALID_CREDENTIALS') {
          error.append(h('br'), h('button', { type: 'button', class: 'link', onclick: () => passwordForm(card, onSignedIn) }, 'Start again'));
        }
      },
    },
    h('label', { for: 'signin-code' }, 'Code from your authenticator app, or a backup code'),
    code,
    h('p', { class: 'hint' }, 'Six digits, or a backup code such as abcde-12345 (each works once).'),
    h('div', { class: 'actions' }, submit),
    error,
  );
  mount(
    card,
    h('h1', null, 'Two-factor authentication'),
    form,
    h('p', { class: 'hint' }, h('button', { type: 'button', class: 'link', onclick: () => passwordForm(card, onSignedIn) }, 'Use another account')),
  );
  code.focus();
}

function registerForm(card: HTMLElement, onSignedIn: OnSignedIn): void {
  const email = h('input', { type: 'email', id: 'register-email', autocomplete: 'username', required: true });
  const company = h('input', { type: 'text', id: 'register-company', autocomplete: 'organization', required: true });
  const password = h('input', { type: 'password', id: 'register-password', autocomplete: 'new-password', required: true, minlength: 10 });
  const error = h('p', { class: 'error', role: 'alert', id: 'register-error' });
  const submit = h('button', { type: 'submit', id: 'register-submit' }, 'Create account');
  const form = h(
    'form',
    {
      id: 'register-form',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const body = { email: email.value, company_name: company.value, password: password.value };
        const res = await act(() => portal.post<SignedIn>('/portal/session/register', body), { button: submit, errorEl: error });
        if (res.ok) onSignedIn(res.value);
      },
    },
    h('label', { for: 'register-email' }, 'Email'),
    email,
    h('label', { for: 'register-company' }, 'Company'),
    company,
    h('label', { for: 'register-password' }, 'Password'),
    password,
    h('p', { class: 'hint' }, 'At least 10 characters.'),
    h('div', { class: 'actions' }, submit),
    error,
  );
  mount(
    card,
    h('h1', null, 'Create a developer account'),
    form,
    h('p', { class: 'hint' }, h('button', { type: 'button', class: 'link', onclick: () => passwordForm(card, onSignedIn) }, 'I have an account')),
  );
}
