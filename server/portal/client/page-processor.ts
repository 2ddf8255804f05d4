// The payment processor account card (account-wide): shown in Settings and in each app's Sales tab.
// Connecting is Stripe Connect OAuth: the API answers Stripe's authorize URL (and sets a cookie
// binding the attempt to this browser), the browser goes there, the person approves on Stripe's own
// page, and Stripe sends it back through the API's callback to Settings with `payments=<result>`.
import { act, api, type Answer } from './api.js';
import { confirmButton, formatDate, h, mount } from './dom.js';

type Account = Answer<'/v1/payments/account', 'get'>;

const RESULTS: Record<string, [string, string]> = {
  connected: ['hint', 'Your Stripe account is connected.'],
  access_denied: ['error', 'Connecting was cancelled on Stripe: nothing was connected.'],
  declined: ['error', 'Stripe did not authorize the connection: nothing was connected. Try again.'],
};

/** Renders the card into `card`; `result` is the callback's outcome when the browser just came back from Stripe. */
export async function processorAccountSection(card: HTMLElement, { result }: { result?: string | null } = {}): Promise<void> {
  const outcome = result ? RESULTS[result] : undefined;
  const render = (acct: Account) => {
    const error = h('p', { class: 'error', role: 'alert', id: 'account-error' });
    const notice = outcome ? h('p', { class: outcome[0], role: 'status', id: 'account-result' }, outcome[1]) : null;
    if (acct.connected) {
      mount(
        card,
        h('h2', null, 'Payment processor'),
        notice,
        h('p', { id: 'account-status' }, 'Connected Stripe account ', h('span', { class: 'mono' }, acct.account_id), ` since ${formatDate(acct.connected_at)}.`),
        h('p', { class: 'hint' }, "For all your apps. Disconnecting stops new sales and revokes Latchkey's access on Stripe; licenses already sold keep working."),
        h(
          'div',
          { class: 'actions' },
          confirmButton(
            'Disconnect',
            'Disconnect the account? Payment links stop selling.',
            async () => {
              const res = await act(() => api.delete('/v1/payments/account'), { errorEl: error });
              if (res.ok) render(res.value);
            },
            { id: 'disconnect-account' },
          ),
        ),
        error,
      );
      return;
    }
    const connect = h(
      'button',
      {
        type: 'button',
        id: 'connect-account',
        onclick: async () => {
          const res = await act(() => api.post('/v1/payments/account/connect', undefined), { button: connect, errorEl: error });
          if (res.ok) location.assign(res.value.authorize_url);
        },
      },
      'Connect with Stripe',
    );
    mount(
      card,
      h('h2', null, 'Payment processor'),
      notice,
      h('p', { id: 'account-status' }, 'No account connected.'),
      h('p', { class: 'hint' }, 'You sign in to Stripe and approve Latchkey there: it may then create checkout sessions on your account and collect the per-license fee.'),
      h('div', { class: 'actions' }, connect),
      error,
    );
  };
  render(await api.get('/v1/payments/account'));
}
