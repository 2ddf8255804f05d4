import { afterAll, describe, expect, it } from 'vitest';
import { owner, settled, uploadBuild, type Owner } from '../builds/support.js';
import { startTestServer, type TestServer } from '../support/server.js';

// One server takes the uploads and runs no jobs; the queue is filled before a second one, sharing
// its database and data directory, starts working it with a single slot.
const front = await startTestServer({ env: { LATCHKEY_RUN_JOBS: 'false' } });
const servers: TestServer[] = [front];
afterAll(async () => {
  for (const s of servers.reverse()) await s.close();
});

const artifact = (tag: string) => ({ data: `${tag}:`.padEnd(4096, 'z'), name: 'tool.bin' });

async function completionOrder(owners: Owner[], builds: { owner: Owner; id: string }[]) {
  const done = await Promise.all(builds.map(async (b) => ({ ...b, build: await settled(b.owner, b.id) })));
  expect(done.every((d) => d.build.status === 'READY')).toBe(true);
  return done.sort((x, y) => Date.parse(x.build.completed_at) - Date.parse(y.build.completed_at)).map((d) => owners.indexOf(d.owner));
}

describe('the job runner takes turns between tenants', () => {
  it("a second tenant's single build is served next, not after the first tenant's 8 queued builds", async () => {
    const a = await owner(front);
    const b = await owner(front);
    const queued: { owner: Owner; id: string }[] = [];
    for (let i = 0; i < 8; i++) queued.push({ owner: a, id: (await uploadBuild(a, artifact(`a${i}`))).id });
    queued.push({ owner: b, id: (await uploadBuild(b, artifact('b'))).id });

    const worker = await startTestServer({ database: front.database, dataDir: front.dataDir, env: { LATCHKEY_JOB_CONCURRENCY: '1' } });
    try {
      const order = await completionOrder([a, b], queued);
      // First come first served would finish B's build last (9th); taking turns finishes it 1st or 2nd.
      expect(order.indexOf(1)).toBeLessThanOrEqual(1);
    } finally {
      // The next test fills its queue before any runner works it.
      await worker.close();
    }
  });

  it('caps the jobs one tenant runs at once (default 1) while leaving free slots to other tenants', async () => {
    const a = await owner(front);
    const b = await owner(front);
    const builds: { owner: Owner; id: string }[] = [];
    for (let i = 0; i < 4; i++) builds.push({ owner: a, id: (await uploadBuild(a, artifact(`cap a${i}`))).id });
    builds.push({ owner: b, id: (await uploadBuild(b, artifact('cap b'))).id });
    const db = front.database.db;
    // Fairness is the order of the claims, not of the completions: with several runners working at
    // once, a job claimed early can still finish late (a cold process, a loaded machine). A trigger
    // in this test's own database writes down each claim as it is made.
    await db.raw(`
      CREATE TABLE test_claims (seq serial PRIMARY KEY, developer_id text);
      CREATE FUNCTION test_note_claim() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO test_claims (developer_id) VALUES (NEW.developer_id); RETURN NEW; END $$;
      CREATE TRIGGER test_note_claim AFTER UPDATE OF locked_by ON jobs
        FOR EACH ROW WHEN (NEW.locked_by IS NOT NULL AND OLD.locked_by IS DISTINCT FROM NEW.locked_by) EXECUTE FUNCTION test_note_claim();`);
    // Two runners of two slots each: at most one lease per tenant at any moment.
    const workers = await Promise.all([1, 2].map(() => startTestServer({ database: front.database, dataDir: front.dataDir, env: { LATCHKEY_JOB_CONCURRENCY: '2' } })));
    servers.push(...workers);
    let maxPerTenant = 0;
    const watching = (async () => {
      for (;;) {
        const rows = await db('jobs').whereNotNull('locked_until').whereIn('developer_id', [a.dev.id, b.dev.id]).groupBy('developer_id').select(db.raw('count(*)::int AS n'));
        maxPerTenant = Math.max(maxPerTenant, ...rows.map((r: { n: number }) => r.n));
        const [left] = await db('jobs').whereIn('developer_id', [a.dev.id, b.dev.id]).count<{ count: string | number }[]>('* as count');
        if (Number(left!.count) === 0) return;
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await completionOrder([a, b], builds);
    await watching;
    expect(maxPerTenant).toBe(1);
    const claims: { developer_id: string }[] = await db('test_claims').whereIn('developer_id', [a.dev.id, b.dev.id]).orderBy('seq');
    expect(claims.length).toBeGreaterThanOrEqual(builds.length);
    // First come first served would claim B's job last (5th); taking turns claims it 1st or 2nd.
    expect(claims.findIndex((c) => c.developer_id === b.dev.id)).toBeLessThanOrEqual(1);
  });
});
