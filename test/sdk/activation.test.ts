import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LicenseError, type LicenseClient } from '../../runtime-sdk/index.js';
import { FINGERPRINT_PATTERN } from '../../runtime-sdk/protocol.js';
import { TestSigner } from './support/authority-keys.js';
import { error, FakeAuthority } from './support/fake-authority.js';
import { FakeClock, HOUR } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { clientOn } from './support/sdk-client.js';

const KEY = 'WXYZ-2345-6789-ABCD';
const clock = new FakeClock();
const machine = fakeMachine('C1');
let authority: FakeAuthority;
let client: LicenseClient;

beforeAll(async () => {
  authority = await new FakeAuthority(clock).start();
});
afterAll(() => authority.close());
beforeEach(async () => {
  authority.licenses.clear();
  authority.addLicense(KEY);
  authority.requests.length = 0;
  authority.scripted.length = 0;
  authority.mutateClaims = undefined;
  authority.down = false;
  client = await clientOn(machine, authority, clock, tempDir(), { retryLimit: 2 });
});
afterEach(() => client.dispose());

async function activationError(key = KEY): Promise<LicenseError> {
  const err = await client.activate(key).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LicenseError);
  return err as LicenseError;
}

describe('activation', () => {
  it('starts unlicensed, activates with a key as typed and answers valid with the signed features and grace', async () => {
    expect(await client.check()).toMatchObject({ state: 'unlicensed', reason: 'not_activated', usable: false });
    const status = await client.activate(' wxyz 2345-6789abcd ');
    expect(status).toMatchObject({
      state: 'valid',
      reason: null,
      usable: true,
      licenseType: 'perpetual',
      features: { tier: 'pro' },
      policy: { device_limit: 2, offline_grace_hours: 72 },
    });
    expect(status.graceEndsAt?.getTime()).toBe(clock.now().getTime() + 72 * HOUR);
    const [request] = authority.requests;
    expect(JSON.parse(request!.body)).toEqual({
      license_key: KEY,
      device_fingerprint: expect.stringMatching(FINGERPRINT_PATTERN),
      build_id: null,
      device_key: expect.stringMatching(/^[\w-]{43}$/),
      app_version: '1.4.2',
      platform: 'linux-x64',
      fingerprint_components: expect.objectContaining({ 'os.machine_id': expect.stringMatching(FINGERPRINT_PATTERN) }),
    });
    expect(request!.headers['user-agent']).toBe('latchkey-runtime-sdk/0.1.0 app_test/1.4.2');
  });

  it('refuses a key that cannot be one without calling the authority', async () => {
    expect((await activationError('ABCD-1234')).code).toBe('INVALID_LICENSE_KEY');
    expect(authority.requests).toHaveLength(0);
  });

  it.each([
    { reply: error(401, 'INVALID_LICENSE_KEY', 'unknown key'), code: 'INVALID_LICENSE_KEY', retryable: false },
    { reply: error(403, 'LICENSE_EXPIRED', 'expired'), code: 'LICENSE_EXPIRED', retryable: false },
    { reply: error(403, 'DEVICE_LIMIT_EXCEEDED', 'limit'), code: 'DEVICE_LIMIT_REACHED', retryable: false },
    { reply: error(403, 'TRIAL_ALREADY_USED', 'trial used'), code: 'TRIAL_ALREADY_USED', retryable: false },
    { reply: error(400, 'VALIDATION_FAILED', 'bad body'), code: 'REQUEST_REJECTED', retryable: false },
    { reply: error(404, 'BUILD_NOT_FOUND', 'no such build'), code: 'REQUEST_REJECTED', retryable: false },
    { reply: error(429, 'RATE_LIMITED', 'slow down', { 'retry-after': '420' }), code: 'TOO_MANY_ATTEMPTS', retryable: true },
  ])('maps $reply.status $code to a stable error, never retrying a 4xx', async ({ reply, code, retryable }) => {
    authority.scripted.push(reply);
    const err = await activationError();
    expect(err).toMatchObject({ code, retryable });
    expect(err.userMessage.length).toBeGreaterThan(10);
    if (code === 'TOO_MANY_ATTEMPTS') expect(err.extra.retryAfterSeconds).toBe(420);
    expect(authority.requests).toHaveLength(1);
    expect((await client.check()).state).toBe('unlicensed');
  });

  it('retries 5xx with backoff and succeeds when the authority recovers', async () => {
    authority.scripted.push(error(503, 'UNAVAILABLE', 'restarting'), error(502, 'BAD_GATEWAY', 'proxy'));
    expect((await client.activate(KEY)).state).toBe('valid');
    expect(authority.requests).toHaveLength(3);
  });

  it('gives up after the retry limit: SERVER_UNAVAILABLE on 5xx, OFFLINE on network errors, both retryable', async () => {
    authority.scripted.push(...Array.from({ length: 3 }, () => error(500, 'INTERNAL', 'boom')));
    expect(await activationError()).toMatchObject({ code: 'SERVER_UNAVAILABLE', retryable: true });
    expect(authority.requests).toHaveLength(3);
    authority.down = true;
    expect(await activationError()).toMatchObject({ code: 'OFFLINE', retryable: true });
    expect(authority.requests).toHaveLength(6);
  });

  it.each([
    ['another app', (c: any) => ({ ...c, app_id: 'app_other' })],
    ['another device', (c: any) => ({ ...c, device: '0'.repeat(64) })],
    ['no life left', (c: any) => ({ ...c, exp: c.iat })],
    // Signed, but without what the status and the grace are computed from: kept, it failed every start after.
    ['a token without its policy', ({ policy: _policy, ...c }: any) => c],
    ['a token whose grace is not a number', (c: any) => ({ ...c, policy: { ...c.policy, offline_grace_hours: '72' } })],
    ['a token without its features', ({ features: _features, ...c }: any) => c],
  ])('refuses a grant for %s', async (_label, mutate) => {
    authority.mutateClaims = mutate;
    expect((await activationError()).code).toBe('INVALID_SERVER_RESPONSE');
    expect((await client.check()).state).toBe('unlicensed');
  });

  it('refuses a grant signed by a key that is not pinned', async () => {
    const impostor = new TestSigner(authority.signer.kid);
    authority.scripted.push({
      status: 200,
      body: {
        token: impostor.sign({
          iss: 'latchkey',
          sub: 'lic_x',
          app_id: 'app_test',
          device: '1'.repeat(64),
          license_type: 'perpetual',
          features: {},
          policy: { device_limit: 9, offline_grace_hours: 9999 },
          license_expires_at: null,
          iat: 1,
          exp: 2e9,
        }),
      },
    });
    expect((await activationError()).code).toBe('INVALID_SERVER_RESPONSE');
  });

  it('refuses a grant issued more than a day from the local clock (replayed, or a broken clock)', async () => {
    authority.mutateClaims = (c) => ({ ...c, iat: c.iat - 25 * 3600, exp: c.exp - 25 * 3600 + 200 * 3600 });
    expect((await activationError()).code).toBe('CLOCK_INCORRECT');
  });
});
