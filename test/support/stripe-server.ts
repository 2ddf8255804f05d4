import { afterAll } from 'vitest';
import { startFakeStripe } from './fake-stripe.js';
import { client } from './http.js';
import { startTestServer } from './server.js';

/** A test server pointed at its own fake Stripe (plus `env`); both are closed after the file's tests. */
export async function startServerWithStripe(env: Record<string, string> = {}) {
  const stripe = await startFakeStripe();
  const server = await startTestServer({ env: { ...stripe.env, ...env } });
  afterAll(async () => {
    await server.close();
    await stripe.close();
  });
  return { stripe, server, call: client(server.url) };
}
