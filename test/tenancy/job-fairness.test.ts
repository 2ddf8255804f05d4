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
    servers.push(worker);
    const order = await completionOrder([a, b], queued);
    // First come first served would finish B's build last (9th); taking turns finishes it 1st or 2nd.
    expect(order.indexOf(1)).toBeLessThanOrEqual(1);
  });

  it('caps the jobs one tenant runs at once (default 1) while leaving free slots to other tenants', async () => {
    const a = await owner(front);
    const b = await owner(front);
    const builds: { owner: Owner; id: string }[] = [];
    for (let i = 0; i < 4; i++) builds.push({ owner: a, id: (await uploadBuild(a, artifact(`cap a${i}`))).id });
    builds.push({ owner: b, id: (await uploadBuild(b, artifact('cap b'))).id });
    const db = front.database.db;
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
    const order = await completionOrder([a, b], builds);
    await watching;
    expect(maxPerTenant).toBe(1);
    expect(order.indexOf(1)).toBeLessThanOrEqual(1);
  });
});
