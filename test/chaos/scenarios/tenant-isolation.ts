import { client } from '../../support/http.js';
import { chaosClient } from '../client.js';
import type { LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';
import { operationsOf, sampleOf } from '../openapi-samples.js';
import { seedSweepWorld, type SweepWorld } from '../sweep-world.js';
import { pathOf } from './bad-input.js';

/** Where the owner reads each resource back, to see that nobody else changed it. */
const READ_BACK: Record<string, (ids: Record<string, string>) => string> = {
  app_id: (ids) => `/v1/apps/${ids.app_id}`,
  license_id: (ids) => `/v1/licenses/${ids.license_id}`,
  build_id: (ids) => `/v1/apps/${ids.app_id}/builds/${ids.build_id}`,
  batch_id: (ids) => `/v1/apps/${ids.app_id}/redemption-batches`,
  webhook: (ids) => `/v1/apps/${ids.app_id}/entitlement-webhook`,
};

export interface IsolationFigures {
  operations: number;
  requests: number;
  leaks: number;
}

/**
 * A second developer (Pro too) calls every developer operation that names a resource, in its path
 * or its body, with the first developer's ids. Every answer must be 404, and the first developer's
 * resources must read back exactly as before.
 */
export async function tenantIsolationSweep(sheet: FigureSheet, server: LatchkeyProcess, owner: SweepWorld): Promise<IsolationFigures> {
  const call = client(server.url);
  const intruder = await seedSweepWorld(call, server.adminToken, 'Intruder');
  const snapshot = async () => {
    const views: Record<string, unknown> = {};
    for (const [name, path] of Object.entries(READ_BACK)) views[name] = (await call('GET', path(owner.ids), { token: owner.dev.accessToken })).body;
    return JSON.stringify(views);
  };
  const before = await snapshot();

  const document = (await call('GET', '/v1/openapi.json')).body;
  const http = chaosClient(sheet, server.url);
  const figures: IsolationFigures = { operations: 0, requests: 0, leaks: 0 };
  const ownerIds = owner.ids;
  for (const op of operationsOf(document)) {
    if (!op.security.some((s) => 'bearerAuth' in s)) continue;
    const sample = VALID_BODIES[op.operationId] ?? (op.body?.contentType === 'application/json' ? sampleOf(op.body.schema) : undefined);
    const body = withOwnerIds(sample, ownerIds);
    const namesOwnerResource = op.pathParams.length > 0 || JSON.stringify(body) !== JSON.stringify(sample);
    if (!namesOwnerResource || !op.pathParams.every((p) => p in ownerIds)) continue;
    figures.operations++;
    for (const credential of [{ token: intruder.dev.accessToken }, { apiKey: intruder.dev.apiKey }]) {
      const answer = await http.send(`${op.method} ${op.path}`, op.method, pathOf(op, ownerIds), { ...credential, ...(body === undefined ? {} : { body }) });
      figures.requests++;
      if (answer?.status !== 404) {
        figures.leaks++;
        sheet.violated(1, `tenant isolation: ${op.method} ${op.path} with another developer's ids answered ${answer?.status} (wanted 404)`);
      }
    }
  }
  if ((await snapshot()) !== before) sheet.violated(1, "tenant isolation: the owner's resources changed during the sweep");
  return figures;
}

/** Bodies the schema's sample cannot make valid: the intruder's request must pass validation to reach the lookup. */
const VALID_BODIES: Record<string, unknown> = {
  updateApp: { name: 'Renamed by an intruder' },
  // A body the route accepts, so the answer is about whose app it is (the generated sample's entry path is not one).
  createUploadSession: { filename: 'app.zip', size_bytes: 1000, sha256: 'a'.repeat(64), platform: 'linux-x64' },
};

/** The sample body with every field that names a kind of id (`app_id`, `license_id`, ...) set to the owner's. */
function withOwnerIds(body: unknown, ids: Record<string, string>): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, k.endsWith('_id') && k in ids ? ids[k] : v]));
}
