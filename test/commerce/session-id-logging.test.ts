import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import Koa from 'koa';
import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { requestLogging } from '../../server/http/logging.js';
import { newSessionId } from '../support/fake-stripe.js';
import { closeNow, listenOnLoopback } from '../support/local-http.js';

// The checkout session id unlocks a license (docs/contract.md: never logged): the access log line of every
// request that carries one, in the path or the query, shows it redacted.
const lines: string[] = [];
const capture = new Writable({
  write(chunk, _encoding, done) {
    lines.push(String(chunk));
    done();
  },
});
const app = new Koa();
app.use(requestLogging(pino({ level: 'info' }, capture)));
app.use((ctx) => {
  ctx.body = 'ok';
});
const server = createServer(app.callback());
const url = await listenOnLoopback(server);
afterAll(() => closeNow(server));

it.each([
  ['the entitlement path', (id: string) => `/v1/public/checkout-session/${id}/entitlement?app_id=app_1`],
  ['the entitlement path in other case', (id: string) => `/V1/Public/Checkout-Session/${id}/entitlement`],
  ['the delivery page query', (id: string) => `/download?session_id=${id}&app_id=app_1`],
])('keeps the session id out of the access log for %s', async (_name, path) => {
  const sessionId = newSessionId();
  lines.length = 0;
  expect((await fetch(`${url}${path(sessionId)}`)).status).toBe(200);
  const logged = lines.map((line) => JSON.parse(line) as { url: string });
  expect(logged).toHaveLength(1);
  expect(logged[0]!.url).toMatch(/redacted/);
  expect(lines.join('')).not.toContain(sessionId);
});
