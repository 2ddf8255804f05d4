import { describe, expect, it } from 'vitest';
import { serverWithTenant } from '../licensing/world.js';
import { CODE_FORMAT, redeem } from '../redemption/support.js';
import { runLatchkey } from '../support/cli.js';

const { server, t } = await serverWithTenant();

const latchkey = (args: string[]) => runLatchkey(server.url, t.dev.apiKey, args);
const batchesOf = async () => (await t.call('GET', `/v1/apps/${t.app.id}/redemption-batches`, { apiKey: t.dev.apiKey })).body as Record<string, unknown>[];

// Each case starts the real executable a few times: generous time, no timing asserted.
describe('latchkey redemption', { timeout: 120_000 }, () => {
  it('generates a batch of floating licenses whose codes redeem to floating licenses, and lists it with its seats', async () => {
    const created = await latchkey([
      'redemption',
      'create-batch',
      '--app',
      t.app.id,
      '--channel',
      'appsumo',
      '--quantity',
      '2',
      '--label',
      'Launch',
      '--seat-model',
      'floating',
      '--max-concurrent',
      '3',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^seat_model\s+floating$/m);
    expect(created.stdout).toMatch(/^max_concurrent\s+3$/m);
    const codes = created.stdout.trim().split('\n').slice(-2);
    for (const code of codes) expect(code).toMatch(CODE_FORMAT);

    const redeemed = await redeem(t, codes[0]!);
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(201);
    const [license] = (await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey })).body;
    expect(license).toMatchObject({ license_key: redeemed.body.license_key, seat_model: 'floating', max_concurrent: 3, lease_ttl_minutes: 15, source: 'appsumo' });

    const node = await latchkey(['redemption', 'create-batch', '--app', t.app.id, '--channel', 'gumroad', '--quantity', '1', '--device-limit', '4', '--json']);
    expect(JSON.parse(node.stdout)).toMatchObject({ seat_model: 'node_locked', device_limit: 4, max_concurrent: null, codes: [expect.stringMatching(CODE_FORMAT)] });

    const list = await latchkey(['redemption', 'batches', '--app', t.app.id]);
    expect(list.code, list.stderr).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^BATCH ID\s+CHANNEL\s+LABEL\s+TYPE\s+SEATS\s+METERS\s+CODES\s+AVAILABLE\s+REDEEMED\s+CREATED AT$/);
    expect(lines[1]).toMatch(/^rbt_\w+\s+appsumo\s+Launch\s+perpetual\s+floating 3 seats\s+app's sold meters\s+2\s+1\s+1\s+\S+$/);
    expect(lines[2]).toMatch(/^rbt_\w+\s+gumroad\s+-\s+perpetual\s+4 devices\s+app's sold meters\s+1\s+1\s+0\s+\S+$/);
  });

  it('generates a batch with --meter whose codes redeem to licenses with those meters, and shows them', async () => {
    const meterArgs = ['--meter', 'export=100/month', '--meter', 'render=5/lifetime'];
    const meters = { export: { uses_per_period: 100, period: 'month' }, render: { uses_per_period: 5, period: 'lifetime' } };
    const created = await latchkey(['redemption', 'create-batch', '--app', t.app.id, '--channel', 'stacksocial', '--quantity', '1', ...meterArgs]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^meters\s+export=100\/month render=5\/lifetime$/m);
    const redeemed = await redeem(t, created.stdout.trim().split('\n').at(-1)!);
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(201);
    const licenses = (await t.call('GET', `/v1/licenses?app_id=${t.app.id}`, { apiKey: t.dev.apiKey })).body as { license_key: string; meters: unknown }[];
    expect(licenses.find((l) => l.license_key === redeemed.body.license_key)?.meters).toEqual(meters);

    const list = await latchkey(['redemption', 'batches', '--app', t.app.id]);
    expect(list.stdout).toMatch(/^rbt_\w+\s+stacksocial\s+-\s+perpetual\s+\d+ devices\s+export=100\/month render=5\/lifetime\s+1\s+0\s+1\s+\S+$/m);
    const json = await latchkey(['redemption', 'batches', '--app', t.app.id, '--json']);
    expect(JSON.parse(json.stdout).at(-1).meters).toEqual(meters);
  });

  it('refuses what the API refuses (exit 2) and generates nothing', async () => {
    const before = (await batchesOf()).length;
    for (const extra of [
      ['--seat-model', 'floating'],
      ['--seat-model', 'floating', '--max-concurrent', '2', '--device-limit', '2'],
      ['--max-concurrent', '2'],
      ['--meter', 'export=0/month'],
    ]) {
      const refused = await latchkey(['redemption', 'create-batch', '--app', t.app.id, '--channel', 'appsumo', '--quantity', '1', ...extra]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('VALIDATION_FAILED');
    }
    expect(await batchesOf()).toHaveLength(before);
    expect((await latchkey(['redemption', 'create-batch', '--app', 'app_missing', '--channel', 'x', '--quantity', '1'])).code).toBe(4);
  });
});
