import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { createApp, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { peFile } from '../support/executables.js';
import { client, formData, type CallOptions } from '../support/http.js';
import { startTestServer } from '../support/server.js';
import { startServerWithStripe } from '../support/stripe-server.js';
import { connectAccount } from '../support/connect-account.js';

// One routine runs the same credential and tenant checks against every secured operation of the
// OpenAPI document, so routes added later are swept without anyone remembering to. The operations
// are read before the tests are collected (top-level await), so each gets its own named tests.

// A fake Stripe: saving a Price ID (updateApp's sample) checks it against the connected account.
const { stripe, server, call } = await startServerWithStripe();

// Credentials that must never work: an access token past its hour and an API key rotated away.
const stale = await registerDeveloper(call);
const revokedApiKey = stale.apiKey;
expect((await call('POST', '/v1/auth/api-keys/rotate', { token: stale.accessToken, body: { password: stale.password } })).status).toBe(200);
server.clock.advance(3600 * 1000 + 1000);
const expiredAccessToken = stale.accessToken;

// Developer A owns the resources; developer B tries to reach them. A is on Pro, which update pushes need.
const devA = await registerDeveloper(call);
const devB = await registerDeveloper(call);
await setPlan(call, server.adminToken, devA.id, 'pro');
const accountA = await connectAccount(server.url, stripe, devA.accessToken);

interface Operation {
  method: string;
  path: string;
  operationId: string;
  security: Record<string, string[]>[];
  hasBody: boolean;
}

async function securedOperations(): Promise<Operation[]> {
  const res = await call('GET', '/v1/openapi.json');
  expect(res.status).toBe(200);
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries<Record<string, any>>(res.body.paths)) {
    for (const [method, op] of Object.entries<any>(methods)) {
      if (!op.security?.length) continue;
      operations.push({ method: method.toUpperCase(), path, operationId: op.operationId, security: op.security, hasBody: Boolean(op.requestBody) });
    }
  }
  return operations;
}

const operations = await securedOperations();

const SCOPES = ['read', 'licenses', 'builds', 'admin'] as const;
type Scope = (typeof SCOPES)[number];

/** API keys of one developer: one with only each scope, and one with every scope but each (and not admin). */
async function keysByScope() {
  const dev = await registerDeveloper(call);
  const keyWith = async (scopes: string[]) => {
    const res = await call('POST', '/v1/auth/api-keys', { token: dev.accessToken, body: { password: dev.password, scopes } });
    expect(res.status).toBe(201);
    return res.body.api_key as string;
  };
  const only = {} as Record<Scope, string>;
  const allBut = {} as Record<Scope, string>;
  for (const scope of SCOPES) {
    only[scope] = await keyWith([scope]);
    allBut[scope] = await keyWith(SCOPES.filter((other) => other !== scope && other !== 'admin'));
  }
  return { only, allBut };
}
const scopedKeys = await keysByScope();
const pathParams = (op: Operation) => [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
const isDeveloperOperation = (op: Operation) => op.security.some((scheme) => 'bearerAuth' in scheme);
/** What an API key needs for a developer operation: the role both its schemes list, a scope or `session` (no API key at all). */
const scopeOf = (op: Operation) => op.security.find((scheme) => 'bearerAuth' in scheme)!.bearerAuth![0] as Scope | 'session';
/** The entitlement webhook and its companions: a per-app URL token plus X-MerchantOps-Secret. */
const isWebhookOperation = (op: Operation) => op.security.some((scheme) => 'merchantOpsSecret' in scheme);

/** Enables the entitlement webhook of a new app of `owner` (on Pro); answers its URL token and secret. */
async function webhookOf(owner: TestDeveloper) {
  const app = await createApp(call, owner, { product_key: 'sweep' });
  const res = await call('POST', `/v1/apps/${app.id}/entitlement-webhook`, { token: owner.accessToken });
  expect(res.status).toBe(201);
  return { token: new URL(res.body.webhook_url).pathname.split('/').pop()!, secret: res.body.secret as string };
}
const webhookA = await webhookOf(devA);
const devC = await registerDeveloper(call);
await setPlan(call, server.adminToken, devC.id, 'pro');
const webhookC = await webhookOf(devC);

/** Lazily created resources of one owner; a fixture asks for its parents through `get`. */
class OwnedResources {
  readonly ids = new Map<string, string>();
  constructor(readonly owner: TestDeveloper) {}

  async get(param: string, operationId: string): Promise<string> {
    const existing = this.ids.get(param);
    if (existing) return existing;
    const fixture = RESOURCE_FIXTURES[param];
    if (!fixture) {
      throw new Error(`${operationId} names {${param}}, which the auth sweep cannot create: add a fixture for "${param}" to RESOURCE_FIXTURES in test/server/auth-sweep.test.ts`);
    }
    const id = await fixture.create(this.owner, (parent) => this.get(parent, operationId), operationId);
    this.ids.set(param, id);
    return id;
  }

  /** The owner's view of every resource created so far, to show that nobody else changed it. */
  async snapshot(): Promise<Record<string, unknown>> {
    const views: Record<string, unknown> = {};
    for (const [param, id] of this.ids) {
      const res = await call('GET', RESOURCE_FIXTURES[param]!.readPath(id, this.ids), { token: this.owner.accessToken });
      expect(res.status).toBe(200);
      views[param] = res.body;
    }
    return views;
  }
}

type Parent = (param: string) => Promise<string>;

interface ResourceFixture {
  /** Creates the resource for `owner`, as `operationId` needs it, and returns its id. */
  create(owner: TestDeveloper, parent: Parent, operationId: string): Promise<string>;
  /** Where the owner reads it back (`ids`: the other resources, its parents among them). */
  readPath(id: string, ids: ReadonlyMap<string, string>): string;
}

/** Operations on a floating license's seats: a node-locked license answers them 409. */
const FLOATING_LICENSE_OPERATIONS = new Set(['setLicenseSeats']);

/** Path-parameter name -> how to make one for developer A. Add one when a route names a new kind of id. */
const RESOURCE_FIXTURES: Record<string, ResourceFixture> = {
  app_id: {
    // With a Price on A's connected account: the sales routes need one.
    create: async (owner) => {
      const priceId = `price_sweep${randomBytes(6).toString('hex')}`;
      stripe.addPrice(accountA, { id: priceId });
      return (await createApp(call, owner, { price_id: priceId })).id;
    },
    readPath: (id) => `/v1/apps/${id}`,
  },
  license_id: {
    // A trial, which even the free plan may create; a floating license where only one will do.
    async create(owner, parent, operationId) {
      const kind = FLOATING_LICENSE_OPERATIONS.has(operationId) ? { seat_model: 'floating', max_concurrent: 2 } : { license_type: 'trial' };
      const res = await call('POST', '/v1/licenses', { token: owner.accessToken, body: { app_id: await parent('app_id'), ...kind } });
      expect(res.status).toBe(201);
      return res.body.license_id;
    },
    readPath: (id) => `/v1/licenses/${id}`,
  },
  build_id: {
    // A READY Windows build: release, download links and signed packages need one (a push, its package signed).
    async create(owner, parent) {
      const appId = await parent('app_id');
      const form = formData({ platform: 'win-x64' }, { artifact: { name: 'tool.bin', data: 'sweep' } });
      const res = await call('POST', `/v1/apps/${appId}/builds`, { token: owner.accessToken, raw: form });
      expect(res.status).toBe(201);
      for (;;) {
        const build = (await call('GET', `/v1/apps/${appId}/builds/${res.body.id}`, { token: owner.accessToken })).body;
        if (build.status === 'READY') return build.id;
        expect(build.status).not.toBe('FAILED');
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    readPath: (id, ids) => `/v1/apps/${ids.get('app_id')}/builds/${id}`,
  },
  upload_id: {
    // A resumable upload of the 5 bytes `sweep`, none sent yet.
    async create(owner, parent) {
      const body = { filename: 'tool.bin', size_bytes: 5, sha256: SWEEP_SHA256, platform: 'cross_platform' };
      const res = await call('POST', `/v1/apps/${await parent('app_id')}/uploads`, { token: owner.accessToken, body });
      expect(res.status).toBe(201);
      return res.body.id;
    },
    readPath: (id, ids) => `/v1/apps/${ids.get('app_id')}/uploads/${id}`,
  },
  batch_id: {
    async create(owner, parent) {
      const res = await call('POST', `/v1/apps/${await parent('app_id')}/redemption-batches`, { token: owner.accessToken, body: { channel: 'sweep', quantity: 2 } });
      expect(res.status).toBe(201);
      return res.body.id;
    },
    // The batch list counts the codes by status: a revoke by someone else would show there.
    readPath: (_id, ids) => `/v1/apps/${ids.get('app_id')}/redemption-batches`,
  },
  key_id: {
    async create(owner) {
      const res = await call('POST', '/v1/auth/api-keys', { token: owner.accessToken, body: { password: owner.password, name: 'sweep' } });
      expect(res.status).toBe(201);
      return res.body.id;
    },
    readPath: () => '/v1/auth/api-keys',
  },
  code: {
    // A redemption code is shown once, at generation: a batch of one, made for it.
    async create(owner, parent) {
      const res = await call('POST', `/v1/apps/${await parent('app_id')}/redemption-batches`, { token: owner.accessToken, body: { channel: 'sweep', quantity: 1 } });
      expect(res.status).toBe(201);
      return res.body.codes[0];
    },
    readPath: (_id, ids) => `/v1/apps/${ids.get('app_id')}/redemption-batches`,
  },
};

const SIGNED_PE = peFile({ signature: 'pkcs7' });
const SWEEP_SHA256 = createHash('sha256').update('sweep').digest('hex');
const sendSweepChunk = (uploadPath: string) => call('PUT', `${uploadPath}?offset=0`, { token: devA.accessToken, raw: { data: 'sweep', contentType: 'application/octet-stream' } });

/** A multipart/form-data sample, sent as is rather than as JSON. */
class Form {
  constructor(readonly raw: ReturnType<typeof formData>) {}
}
const withBody = (body: unknown): CallOptions => (body instanceof Form ? { raw: body.raw } : { body });

/**
 * operationId -> a valid request body. An id of developer A's in the body (through `resource`) makes
 * the operation subject to the tenant check, like an id in the path.
 */
const SAMPLE_BODIES: Record<string, (resource: Parent) => unknown> = {
  setLicenseSeats: () => ({ max_concurrent: 3 }),
  setupTwoFactor: () => ({ password: devA.password }),
  confirmTwoFactor: () => ({ code: '123456' }),
  changePassword: () => ({ password: devA.password, new_password: 'correct horse battery staple' }),
  createApiKey: () => ({ password: devA.password, scopes: ['read'] }),
  rotateApiKey: () => ({ password: devA.password }),
  revokeApiKey: () => ({ password: devA.password }),
  disableTwoFactor: () => ({ password: 'correct horse battery', code: '123456' }),
  createApp: () => ({ name: 'Sweep', platforms: ['linux-x64'] }),
  updateApp: () => {
    const priceId = `price_sweep${randomBytes(6).toString('hex')}`;
    stripe.addPrice(accountA, { id: priceId });
    return { name: 'Renamed by someone else', price_id: priceId };
  },
  connectPaymentAccount: () => ({ account_id: stripe.addAccount() }),
  createLicense: async (resource) => ({ app_id: await resource('app_id'), license_type: 'trial' }),
  provisionMarketplaceLicense: async (resource) => ({ app_id: await resource('app_id'), channel: 'sweep', marketplace_order_id: `order_${randomBytes(6).toString('hex')}` }),
  createRedemptionBatch: () => ({ channel: 'sweep', quantity: 1 }),
  createUploadSession: () => ({ filename: 'tool.bin', size_bytes: 5, sha256: SWEEP_SHA256, platform: 'cross_platform' }),
  putUploadChunk: () => new Form({ data: new TextEncoder().encode('sweep'), contentType: 'application/octet-stream' }),
  uploadBuild: () => new Form(formData({ platform: 'cross_platform' }, { artifact: { name: 'tool.bin', data: 'sweep' } })),
  replaceBuildPackage: () => new Form(formData({}, { package: { name: 'signed.exe', data: SIGNED_PE } })),
  pushAppUpdate: async (resource) => {
    // A push needs a license holder besides the READY build it names.
    await resource('license_id');
    return { target_build_id: await signedBuild(resource), release_notes: 'Sweep' };
  },
  pushLicenseUpdate: async (resource) => ({ target_build_id: await signedBuild(resource), release_notes: 'Sweep' }),
  setLicenseDownloadLimit: () => ({ download_limit: 5 }),
  setLicenseMeters: () => ({ meters: { export: { uses_per_period: 5, period: 'month' } } }),
};

/** A Windows build is pushed once its package was replaced with a signed one (SPEC Versioning 3): A's build, signed. */
async function signedBuild(resource: (param: string) => Promise<string>): Promise<string> {
  const [appId, buildId] = [await resource('app_id'), await resource('build_id')];
  const form = formData({}, { package: { name: 'signed.exe', data: SIGNED_PE } });
  expect((await call('PUT', `/v1/apps/${appId}/builds/${buildId}/signed-package`, { token: devA.accessToken, raw: form })).status).toBe(200);
  return buildId;
}

/** operationId -> what must exist besides the path's resources for the owner's request to succeed. */
const enableWebhookAt = async (path: string) => expect((await call('POST', path.replace(/\/rotate-secret$/, ''), { token: devA.accessToken })).status).toBe(201);
const OWNER_PRECONDITIONS: Record<string, (path: string) => Promise<void>> = {
  rotateEntitlementWebhookSecret: enableWebhookAt,
  disableEntitlementWebhook: enableWebhookAt,
  // Completing needs every byte sent.
  completeUploadSession: async (path) => expect((await sendSweepChunk(path.replace(/\/complete$/, ''))).status).toBe(200),
  getPaymentLink: async (path) => expect((await call('POST', path, { token: devA.accessToken })).status).toBe(201),
  deletePaymentLink: async (path) => expect((await call('POST', path, { token: devA.accessToken })).status).toBe(201),
};

/** operationId -> the query a request needs besides its path and body. */
const QUERIES: Record<string, string> = {
  putUploadChunk: '?offset=0',
};

/** Developer A's request for `op`: real ids of A's (created on demand) and a valid body. */
async function requestOf(op: Operation, resources: OwnedResources): Promise<{ path: string; body: unknown }> {
  let path = op.path;
  for (const param of pathParams(op)) path = path.replace(`{${param}}`, await resources.get(param, op.operationId));
  await OWNER_PRECONDITIONS[op.operationId]?.(path);
  path += QUERIES[op.operationId] ?? '';
  if (!op.hasBody) return { path, body: undefined };
  const sample = SAMPLE_BODIES[op.operationId];
  if (!sample) throw new Error(`${op.operationId} takes a body: add a valid sample to SAMPLE_BODIES in test/server/auth-sweep.test.ts`);
  return { path, body: await sample((param) => resources.get(param, op.operationId)) };
}

const BAD_CREDENTIALS: [string, CallOptions][] = [
  ['no credentials', {}],
  ['a garbage bearer token', { token: 'garbage' }],
  ['a garbage API key', { apiKey: `lk_${'0'.repeat(24)}_${'A'.repeat(43)}` }],
  ['an expired access token', { token: expiredAccessToken }],
  ['a revoked API key as bearer', { token: revokedApiKey }],
  ['a revoked API key as X-API-Key', { apiKey: revokedApiKey }],
];

it('sweeps the secured operations of the OpenAPI document', () => {
  // Guards against a sweep that silently finds nothing to check.
  expect(operations.map((op) => op.operationId)).toEqual(
    expect.arrayContaining([
      'getMe',
      'listApps',
      'updateApp',
      'setDeveloperPlan',
      'createPaymentLink',
      'getPaymentLink',
      'deletePaymentLink',
      'createPurchaseLink',
      'receiveEntitlementEvent',
      'redactStore',
      'listApiKeys',
      'revokeApiKey',
      'changePassword',
    ]),
  );
});

/** Secrets that must never open app A's webhook URL: none, a wrong one, another app's, a developer credential instead. */
const BAD_WEBHOOK_SECRETS: [string, CallOptions][] = [
  ['no secret', {}],
  ['a garbage secret', { headers: { 'x-merchantops-secret': 'whsec_garbage' } }],
  ["another app's secret", { headers: { 'x-merchantops-secret': webhookC.secret } }],
  ["the owner's access token instead", { token: devA.accessToken }],
  ["the owner's API key instead", { apiKey: devA.apiKey }],
];

describe.each(operations.map((op) => [`${op.method} ${op.path}`, op] as const))('%s', (_name, op) => {
  const webhookPath = (token: string) => op.path.replace('{webhook_token}', token);

  // Only the checks that apply to the operation's kind of credential are registered.
  if (isWebhookOperation(op)) {
    it.each(BAD_WEBHOOK_SECRETS)('refuses %s with 401 at a real webhook URL', async (_case, credentials) => {
      expectError(await call(op.method, webhookPath(webhookA.token), { ...credentials, body: op.hasBody ? {} : undefined }), 401, 'UNAUTHORIZED');
    });

    it('answers 404 to an unknown URL token, even with a valid secret', async () => {
      for (const secret of [webhookA.secret, undefined]) {
        const headers: Record<string, string> = secret ? { 'x-merchantops-secret': secret } : {};
        expectError(await call(op.method, webhookPath('A'.repeat(43)), { headers, body: op.hasBody ? {} : undefined }), 404, 'NOT_FOUND');
      }
    });
  } else {
    it.each(BAD_CREDENTIALS)('refuses %s with 401', async (_case, credentials) => {
      // Authentication comes before anything else, so no real ids or body are needed to reach it.
      const path = op.path.replace(/\{\w+\}/g, 'placeholder');
      expectError(await call(op.method, path, { ...credentials, body: op.hasBody ? {} : undefined }), 401);
    });
  }

  if (!isDeveloperOperation(op)) return;
  const scope = scopeOf(op);
  if (scope === 'session') {
    it('refuses every API key, whatever its scopes, with 403 SESSION_REQUIRED', async () => {
      const path = op.path.replace(/\{\w+\}/g, 'placeholder');
      for (const apiKey of [devB.apiKey, ...Object.values(scopedKeys.only)]) {
        expectError(await call(op.method, path, { apiKey, body: op.hasBody ? {} : undefined }), 403, 'SESSION_REQUIRED');
      }
    });
  } else {
    it(`refuses an API key without the \`${scope}\` scope (or admin) with 403 INSUFFICIENT_SCOPE, and lets one with it through`, async () => {
      const path = op.path.replace(/\{\w+\}/g, 'placeholder');
      const send = (apiKey: string) => call(op.method, path, { apiKey, body: op.hasBody ? {} : undefined });
      expectError(await send(scopedKeys.allBut[scope]), 403, 'INSUFFICIENT_SCOPE');
      for (const apiKey of [scopedKeys.only[scope], scopedKeys.only.admin]) expect((await send(apiKey)).body.error_code).not.toBe('INSUFFICIENT_SCOPE');
    });
  }

  it("answers 404 to another developer naming A's resources, and changes nothing", async ({ skip }) => {
    const resources = new OwnedResources(devA);
    const { path, body } = await requestOf(op, resources);
    if (resources.ids.size === 0) skip('the request names no resource: it acts on the caller only');

    const before = await resources.snapshot();
    // An operation for sessions only refuses B's API key before it looks at anything (the check above).
    const credentialsOfB = scope === 'session' ? [{ token: devB.accessToken }] : [{ token: devB.accessToken }, { apiKey: devB.apiKey }];
    for (const credentials of credentialsOfB) {
      expectError(await call(op.method, path, { ...credentials, ...withBody(body) }), 404);
    }
    expect(await resources.snapshot()).toEqual(before);

    // The same request from the owner succeeds: the 404 was about the tenant, not the request.
    const own = await call(op.method, path, { token: devA.accessToken, ...withBody(body) });
    expect(own.status, `${op.operationId} as the owner: ${JSON.stringify(own.body)}`).toBeLessThan(300);
  });
});

describe('operator endpoint', () => {
  const planPath = (id: string) => `/v1/admin/developers/${id}/plan`;

  it('does not exist when LATCHKEY_ADMIN_TOKEN is unset', async () => {
    const bare = await startTestServer({ env: { LATCHKEY_ADMIN_TOKEN: undefined } });
    try {
      const bareCall = client(bare.url);
      const dev = await registerDeveloper(bareCall);
      for (const credentials of [{}, { token: 'x'.repeat(48) }, { token: dev.accessToken }]) {
        expectError(await bareCall('PUT', planPath(dev.id), { ...credentials, body: { plan: 'pro' } }), 404, 'NOT_FOUND');
      }
      expect((await bareCall('GET', '/v1/auth/me', { token: dev.accessToken })).body.plan).toBe('free');
    } finally {
      await bare.close();
    }
  });

  it('refuses a wrong token and a developer credential with 401', async () => {
    const dev = await registerDeveloper(call);
    for (const credentials of [{ token: `${server.adminToken}x` }, { token: dev.accessToken }, { apiKey: dev.apiKey }]) {
      expectError(await call('PUT', planPath(dev.id), { ...credentials, body: { plan: 'pro' } }), 401, 'UNAUTHORIZED');
    }
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.plan).toBe('free');
  });

  it('sets the plan with the right token', async () => {
    const dev = await registerDeveloper(call);
    const res = await call('PUT', planPath(dev.id), { token: server.adminToken, body: { plan: 'pro' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: dev.id, plan: 'pro' });
    expect((await call('GET', '/v1/auth/me', { token: dev.accessToken })).body.plan).toBe('pro');
    expectError(await call('PUT', planPath('dev_missing'), { token: server.adminToken, body: { plan: 'pro' } }), 404, 'DEVELOPER_NOT_FOUND');
    expectError(await call('PUT', planPath(dev.id), { token: server.adminToken, body: { plan: 'gold' } }), 400, 'VALIDATION_FAILED');
  });
});
