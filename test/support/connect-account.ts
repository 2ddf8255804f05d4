import type { FakeStripe } from './fake-stripe.js';

/** A started Connect OAuth authorization, as the browser that started it holds it. */
export interface StartedConnect {
  status: number;
  body: any;
  authorizeUrl: URL | null;
  state: string | null;
  /** `lk_connect=<value>`: the binding cookie, as the browser sends it back to the callback. */
  cookie: string | null;
}

/** POST /v1/payments/account/connect with a signed-in session's access token (or an API key, which is refused). */
export async function startConnect(baseUrl: string, credential: { token?: string; apiKey?: string }): Promise<StartedConnect> {
  const headers: Record<string, string> = credential.token ? { authorization: `Bearer ${credential.token}` } : { 'x-api-key': credential.apiKey ?? '' };
  const res = await fetch(`${baseUrl}/v1/payments/account/connect`, { method: 'POST', headers });
  const body = (await res.json()) as any;
  const cookie =
    res.headers
      .getSetCookie()
      .map((c) => /^(lk_connect=[^;]+)/.exec(c)?.[1])
      .find(Boolean) ?? null;
  const authorizeUrl = res.status === 200 ? new URL(body.authorize_url) : null;
  return { status: res.status, body, authorizeUrl, state: authorizeUrl?.searchParams.get('state') ?? null, cookie };
}

/** Stripe's redirect back, followed by a browser holding `cookie` (or none): the answer, not followed further. */
export async function connectCallback(baseUrl: string, query: Record<string, string>, cookie: string | null, accept = '*/*') {
  const headers: Record<string, string> = { accept };
  if (cookie) headers.cookie = cookie;
  const res = await fetch(`${baseUrl}/v1/payments/account/callback?${new URLSearchParams(query)}`, { headers, redirect: 'manual' });
  const text = await res.text();
  const body = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
  return { status: res.status, location: res.headers.get('location'), body, headers: res.headers };
}

/** Connects `account` for the developer the whole way, as a person approving on Stripe would; answers the account. */
export async function connectAccount(baseUrl: string, stripe: FakeStripe, accessToken: string, account: string = stripe.addAccount()): Promise<string> {
  const started = await startConnect(baseUrl, { token: accessToken });
  if (started.status !== 200 || !started.state) throw new Error(`connect: ${started.status} ${JSON.stringify(started.body)}`);
  const back = await connectCallback(baseUrl, { code: stripe.grantCode(account), state: started.state }, started.cookie);
  if (back.status !== 303) throw new Error(`connect callback: ${back.status} ${JSON.stringify(back.body)}`);
  return account;
}
