import { randomBytes } from 'node:crypto';
import { createDb } from '../../../server/db/knex.js';
import { seedApp, seedDeveloper, seedMany, type SeededDeveloper } from '../../bench/seed.js';
import { client, formData, type Call } from '../../support/http.js';
import type { ChaosDatabase, LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';

const FLOOD = 200;
/** Big enough that a job's work (hash, scan, store) outweighs claiming it. */
const ARTIFACT_BYTES = 256 * 1024;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
};

async function upload(call: Call, dev: SeededDeveloper, appId: string): Promise<string> {
  const form = formData({ platform: 'cross_platform' }, { artifact: { name: 'tool.bin', data: randomBytes(ARTIFACT_BYTES) } });
  const res = await call('POST', `/v1/apps/${appId}/builds`, { apiKey: dev.apiKey, raw: form });
  if (res.status !== 201) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** The build once its job is done with it: when it came and went, and how long that took, server-side. */
async function finished(call: Call, dev: SeededDeveloper, appId: string, id: string): Promise<{ status: string; ms: number; createdAt: number; completedAt: number }> {
  for (;;) {
    const build = (await call('GET', `/v1/apps/${appId}/builds/${id}`, { apiKey: dev.apiKey })).body;
    if (build.status === 'READY' || build.status === 'FAILED') {
      const [createdAt, completedAt] = [Date.parse(build.created_at), Date.parse(build.completed_at)];
      return { status: build.status, ms: completedAt - createdAt, createdAt, completedAt };
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * docs/contract.md, Limits (job fairness): tenant A floods the server with 200 protection jobs;
 * tenant B's single build, uploaded right after, must not wait behind them. Judged by order, from
 * the builds' own server-side timestamps, not by a duration: of A's jobs queued ahead of B's, those
 * finished while B's waited and ran "passed" it. First come first served lets every one of them
 * pass; taking turns only the one running when B's arrived and the few that finish while B's own
 * runs beside them (A's jobs run one at a time under the per-tenant cap). At most a tenth may pass,
 * which tells the two apart by an order of magnitude on a machine however busy. The durations
 * (alone, under load, B's) are printed for the reader, not judged.
 */
export async function tenantFairness(sheet: FigureSheet, database: ChaosDatabase, server: LatchkeyProcess): Promise<void> {
  const call = client(server.url);
  const db = createDb(database.url);
  try {
    const [a, b] = [await seedDeveloper(call), await seedDeveloper(call)];
    const [appA, appB] = [await seedApp(call, a, 'Flooding tenant'), await seedApp(call, b, 'Quiet tenant')];

    // The job's duration with nothing else queued.
    const solo: number[] = [];
    for (let i = 0; i < 3; i++) solo.push((await finished(call, b, appB.id, await upload(call, b, appB.id))).ms);

    const floodStarted = Date.now();
    await seedMany(FLOOD, () => upload(call, a, appA.id), 8);
    sheet.requests += FLOOD;
    const floodUploadMs = Date.now() - floodStarted;

    const single = await finished(call, b, appB.id, await upload(call, b, appB.id));
    const queuedBehind = Number(((await db('builds').where({ app_id: appA.id }).whereIn('status', ['QUEUED', 'PROCESSING']).count('* as n')) as { n: string | number }[])[0]!.n);
    // A few more of A's completions, for the duration of its jobs around B's.
    await new Promise((r) => setTimeout(r, 2_000));
    const flood = (await db('builds').where({ app_id: appA.id }).select('created_at', 'completed_at')) as { created_at: Date; completed_at: Date | null }[];
    const completions = flood
      .map((r) => r.completed_at?.getTime())
      .filter((t): t is number => t !== undefined)
      .sort((x, y) => x - y);
    const gaps = completions.slice(1).map((t, i) => t - completions[i]!);
    const underLoad = median(gaps);
    // Of A's jobs queued before B's, those not done when B's arrived; and of those, the ones done before B's.
    const ahead = flood.filter((r) => r.created_at.getTime() < single.createdAt && (r.completed_at === null || r.completed_at.getTime() > single.createdAt));
    const passed = ahead.filter((r) => r.completed_at !== null && r.completed_at.getTime() < single.completedAt).length;
    const mayPass = Math.floor(ahead.length / 10);

    sheet.figures.set('tenant fairness: job duration alone (median of 3)', `${median(solo)} ms`);
    sheet.figures.set(`tenant fairness: flooding tenant's ${FLOOD} uploads took`, `${floodUploadMs} ms (${completions.length} of its jobs done 2 s after B's)`);
    sheet.figures.set("tenant fairness: flooding tenant's job duration under load (median gap)", `${underLoad} ms`);
    sheet.figures.set("tenant fairness: other tenant's single job, upload to READY", `${single.ms} ms (${(single.ms / underLoad).toFixed(2)} job durations)`);
    sheet.figures.set("tenant fairness: flooding tenant's jobs ahead of B's, and those done before it", `${ahead.length}, ${passed} (at most ${mayPass})`);
    sheet.figures.set("tenant fairness: flooding tenant's jobs still queued when it finished", queuedBehind);
    sheet.violated(single.status === 'READY' ? 0 : 1, `tenant fairness: the quiet tenant's build ended ${single.status}`);
    // Fewer than 20 ahead and the order proves nothing: the flood had drained before B's upload.
    sheet.violated(ahead.length >= 20 ? 0 : 1, `tenant fairness: only ${ahead.length} of the flood's jobs were queued when the quiet tenant's came, too few to judge`);
    sheet.violated(
      passed <= mayPass ? 0 : 1,
      `tenant fairness: ${passed} of the flood's ${ahead.length} jobs queued ahead finished before the quiet tenant's, more than ${mayPass}`,
    );
    // The flood's remaining jobs go with its app (they find their builds gone).
    const removed = await call('DELETE', `/v1/apps/${appA.id}`, { apiKey: a.apiKey });
    if (removed.status >= 300) throw new Error(`delete app: ${removed.status} ${JSON.stringify(removed.body)}`);
  } finally {
    await db.destroy();
  }
}
