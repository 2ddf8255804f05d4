import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom, shuffle } from '../support/random.js';
import { startTestServer } from '../support/server.js';
import { brokerOf, merchant, newShop, shopState, type EventBody } from './support.js';

const server = await startTestServer();
afterAll(() => server.close());
const m = await merchant(server);
const db = server.database.db;

/**
 * A shop's events with strictly increasing occurred_at: random grants (trial or not) and revokes,
 * ending with a paid grant (`endsEntitled`) or a revoke. Fields only: shop and ids are added per run.
 */
function sequence(random: () => number, endsEntitled: boolean): EventBody[] {
  const length = 3 + Math.floor(random() * 5);
  const start = Date.parse('2026-03-01T00:00:00Z');
  const events: EventBody[] = [];
  for (let i = 0; i < length; i++) {
    const last = i === length - 1;
    const entitled = last ? endsEntitled : random() < 0.6;
    events.push({ seq: i, entitled, trial: entitled && !last && random() < 0.4, occurred_at: new Date(start + i * 60_000).toISOString() });
  }
  return events;
}

/** Sends `events` (by their `seq`) for a new shop with event ids of that shop; answers the shop's final state. */
async function deliver(events: EventBody[]) {
  const b = brokerOf(m, newShop());
  const ids = new Map<unknown, string>();
  for (const e of events) {
    if (!ids.has(e.seq)) ids.set(e.seq, `${b.shop}-${String(e.seq)}`);
    const { seq, ...fields } = e;
    const res = await b.send(b.event({ ...fields, event_id: ids.get(seq) }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  const read = await b.entitlement();
  const { license, fees } = await shopState(m, b.shop);
  const licenses = await db('licenses')
    .where({ app_id: m.app.id, source: 'commerce_platform' })
    .whereIn('id', db('store_licenses').select('license_id').where({ shop: b.shop }));
  return { entitled: read.body.entitled as boolean, trial: read.body.trial as boolean, licenses: licenses.length, fees: fees.length, status: license?.status ?? null };
}

describe("any shuffle of a shop's events, with duplicates, ends where the ordered sequence ends", () => {
  const SEEDS = Array.from({ length: 30 }, (_, i) => 9001 + i);

  it.each(SEEDS)('seed %i', async (seed) => {
    const random = seededRandom(seed);
    const endsEntitled = seed % 3 !== 0;
    const events = sequence(random, endsEntitled);
    const withDuplicates = [...events, ...events.filter(() => random() < 0.5)];
    const ordered = await deliver(events);
    const shuffled = await deliver(shuffle(withDuplicates, random));

    // The last event decides the entitlement, in any order; at most one license per shop.
    expect(shuffled.entitled).toBe(endsEntitled);
    expect(ordered.entitled).toBe(endsEntitled);
    expect(ordered.licenses).toBeLessThanOrEqual(1);
    expect(shuffled.licenses).toBeLessThanOrEqual(1);
    if (endsEntitled) {
      // Ending paid: one active license, no trial left, and exactly one fee either way.
      expect(shuffled).toEqual(ordered);
      expect(ordered).toEqual({ entitled: true, trial: false, licenses: 1, fees: 1, status: 'ACTIVE' });
    } else {
      // Ending in a revoke: earlier events may have been skipped as stale, so a license and its fee may
      // exist or not (docs/contract.md's exception); never a second one, never active.
      expect(shuffled.fees).toBeLessThanOrEqual(1);
      expect(shuffled.status).not.toBe('ACTIVE');
    }
  });
});

describe('concurrent deliveries', () => {
  it('of one event, 20 at once: one outcome, one license, one fee', async () => {
    const b = brokerOf(m);
    const event = b.event({ customer_email: 'race@shop.example' });
    const answers = await Promise.all(Array.from({ length: 20 }, () => b.send(event)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const actions = answers.map((a) => a.body.action).sort();
    expect(actions.filter((a) => a === 'granted')).toHaveLength(1);
    expect(actions.filter((a) => a === 'duplicate')).toHaveLength(19);
    expect(new Set(answers.map((a) => a.body.license_key)).size).toBe(1);
    const { license, fees } = await shopState(m, b.shop);
    expect(license.status).toBe('ACTIVE');
    expect(fees).toHaveLength(1);
    expect(await db('licenses').where({ app_id: m.app.id }).where('license_key', answers[0]!.body.license_key)).toHaveLength(1);
    expect(await db('email_outbox').where({ license_id: license.id })).toHaveLength(1);
  });

  it('of 20 different events of one shop: applied one at a time, one license and one fee', async () => {
    const b = brokerOf(m);
    const events = Array.from({ length: 20 }, (_, i) => b.event({ entitled: i % 4 !== 3 }));
    const answers = await Promise.all(events.map((e) => b.send(e)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const actions = answers.map((a) => a.body.action);
    expect(actions.filter((a) => a === 'granted')).toHaveLength(1);
    const { fees } = await shopState(m, b.shop);
    expect(fees).toHaveLength(1);
    const licenses = await db('store_licenses').where({ app_id: m.app.id, shop: b.shop });
    expect(licenses).toHaveLength(1);
    expect(await db('entitlement_events').where({ store_license_id: licenses[0].id })).toHaveLength(20);
  });

  it('of one event for another app, 10 at once: one record, all acknowledged', async () => {
    const b = brokerOf(m);
    const event = b.event({ app: 'other-app' });
    const answers = await Promise.all(Array.from({ length: 10 }, () => b.send(event)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.filter((a) => a.body.action === 'unactionable')).toHaveLength(1);
    expect(answers.filter((a) => a.body.action === 'duplicate' && a.body.original_action === 'unactionable')).toHaveLength(9);
  });
});
