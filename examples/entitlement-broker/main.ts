/**
 * A small broker between a commerce platform's app-subscription webhooks and Latchkey's entitlement
 * webhook. Run it with `npx tsx examples/entitlement-broker/main.ts` (see README.md).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createBroker } from './broker.js';
import { decisionFromSubscription, type SubscriptionNotification } from './normalize.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set; see examples/entitlement-broker/README.md`);
    process.exit(2);
  }
  return value;
}

const broker = createBroker({
  webhookUrl: required('LATCHKEY_WEBHOOK_URL'),
  secret: required('LATCHKEY_WEBHOOK_SECRET'),
  onRetry: (attempt, reason) => console.warn(`attempt ${attempt} failed (${reason}); retrying in about 2 seconds`),
});
const productKey = required('LATCHKEY_PRODUCT_KEY');
const platformSecret = required('PLATFORM_WEBHOOK_SECRET');
const port = Number(process.env.PORT ?? 8787);

/** The platform signs the raw body: HMAC-SHA256, base64, in X-Shopify-Hmac-Sha256. */
function signedByPlatform(body: Buffer, signature: string | undefined): boolean {
  if (!signature) return false;
  const expected = createHmac('sha256', platformSecret).update(body).digest();
  const given = Buffer.from(signature, 'base64');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
  const header = (name: string) => req.headers[name] as string | undefined;
  if (req.method !== 'POST' || req.url !== '/webhooks/app-subscriptions') return void res.writeHead(404).end();
  if (!signedByPlatform(body, header('x-shopify-hmac-sha256'))) return void res.writeHead(401).end();
  const decision = decisionFromSubscription(JSON.parse(body.toString('utf8')) as SubscriptionNotification, {
    productKey,
    shop: header('x-shopify-shop-domain') ?? '',
    webhookId: header('x-shopify-webhook-id') ?? '',
    triggeredAt: header('x-shopify-triggered-at') ?? new Date().toISOString(),
    topic: header('x-shopify-topic'),
  });
  const delivery = await broker.forward(decision);
  process.stdout.write(
    `${decision.shop} ${decision.event_id}: ${delivery.delivered ? JSON.stringify(delivery.body) : `not delivered (${delivery.failure}, HTTP ${delivery.status})`}\n`,
  );
  // Saved, or refused for good (retrying cannot help): acknowledge. Out of attempts: let the platform retry later.
  res.writeHead(delivery.delivered || delivery.failure === 'permanent' ? 200 : 503).end();
}

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
}).listen(port, () => process.stdout.write(`entitlement broker listening on http://localhost:${port}/webhooks/app-subscriptions\n`));
