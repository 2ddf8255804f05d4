import { seedApp, seedDeveloper, seedLicense, seedProPlan, seedReadyBuild, type SeededDeveloper } from '../bench/seed.js';
import type { Call } from '../support/http.js';

/** A Pro developer with one of each resource the API names by id, for the sweeps to aim at. */
export interface SweepWorld {
  dev: SeededDeveloper;
  /** Path-parameter name -> a real id of the developer's. */
  ids: Record<string, string>;
  /** The entitlement webhook secret of `ids.webhook_token`. */
  webhookSecret: string;
}

export async function seedSweepWorld(call: Call, adminToken: string, name: string): Promise<SweepWorld> {
  const dev = await seedDeveloper(call);
  await seedProPlan(call, adminToken, dev);
  const app = await seedApp(call, dev, name);
  const license = await seedLicense(call, dev, { app_id: app.id });
  const build = await seedReadyBuild(call, dev, app.id, '1.0.0');
  const ids: Record<string, string> = { app_id: app.id, license_id: license.license_id, build_id: build.id, developer_id: dev.id };

  const batch = await call('POST', `/v1/apps/${app.id}/redemption-batches`, { apiKey: dev.apiKey, body: { channel: 'sweep', quantity: 2 } });
  if (batch.status !== 201) throw new Error(`redemption batch: ${batch.status} ${JSON.stringify(batch.body)}`);
  ids.batch_id = batch.body.id;
  ids.code = batch.body.codes[0];

  const webhook = await call('POST', `/v1/apps/${app.id}/entitlement-webhook`, { apiKey: dev.apiKey });
  if (webhook.status !== 201) throw new Error(`entitlement webhook: ${webhook.status} ${JSON.stringify(webhook.body)}`);
  ids.webhook_token = new URL(webhook.body.webhook_url).pathname.split('/').pop()!;
  return { dev, ids, webhookSecret: webhook.body.secret };
}
