import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../server/db/embedded.js';
import { createDb } from '../../server/db/knex.js';
import { migrateToLatest } from '../../server/db/migrate.js';
import { migrations } from '../../server/db/migrations/index.js';
import { FakeClamd } from '../builds/fake-clamd.js';
import { startFakeSmtp, type FakeSmtp } from '../commerce/fake-smtp.js';
import { createEmptyDatabase } from '../support/database.js';
import { createApp, createLicense, randomFingerprint, registerDeveloper, setPlan, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { S3_CLIENT_ENV, startS3Server } from '../support/s3-server.js';
import { cleanUpServer, spawnServer, waitForReady, type ServerProcess } from '../support/server-process.js';

// Issue 24 item 2: two compiled servers (`npm start`) on one PostgreSQL and one S3 bucket behave as
// one service. They start together on a database without tables (migrations take turns), share
// sessions, signed links, signing keys, download allowances and the email outbox, and survive one
// of them being killed (SIGKILL) in the middle of a storm of activations, uploads, downloads and
// emails: every acknowledged write is there, device limits and the download allowance are exact,
// every build is protected (the one the dead instance was protecting by the survivor once its lease
// lapsed), and every email is sent once.

/** Short, so the survivor takes over the dead instance's job within the test's time. */
const JOB_LEASE_SECONDS = 5;
/** Nothing is ever found: the fake clamd is there to count scans, one per protection run. */
const NEVER_FOUND = 'NO-SUCH-SIGNATURE';

const s3 = await startS3Server();
const database = await createEmptyDatabase();
// The instance to be killed answers its scans late, so a protection job of its own is in progress when it dies.
const clamds = [await new FakeClamd(NEVER_FOUND, 1500).start(), await new FakeClamd(NEVER_FOUND).start()];
// A mail server per instance, so that each message received says which instance sent it.
const smtps = [await startFakeSmtp(), await startFakeSmtp()];
const shared = {
  DATABASE_URL: database.url,
  LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
  LATCHKEY_SIGNING_KEYS: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
  LATCHKEY_ADMIN_TOKEN: randomBytes(24).toString('hex'),
  LATCHKEY_RATE_LIMIT_MULTIPLIER: '1000',
  LATCHKEY_JOB_LEASE_SECONDS: String(JOB_LEASE_SECONDS),
  LATCHKEY_JOB_TENANT_CONCURRENCY: '2',
  LOG_LEVEL: 'warn',
  ...s3.env,
  ...S3_CLIENT_ENV,
};

interface Instance {
  name: string;
  url: string;
  dataDir: string;
  server: ServerProcess;
  call: Call;
  clamd: FakeClamd;
  smtp: FakeSmtp;
}

// Both started at once, each with its own data directory (one process per directory).
const instances: Instance[] = await Promise.all(
  clamds.map(async (clamd, i): Promise<Instance> => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `latchkey-instance-${i}-`));
    const smtp = smtps[i]!;
    const server = spawnServer({ ...shared, PORT: String(port), PUBLIC_BASE_URL: url, LATCHKEY_DATA_DIR: dataDir, LATCHKEY_CLAMD_ADDRESS: clamd.address, SMTP_URL: smtp.url });
    return { name: `instance ${i}`, url, dataDir, server, call: client(url), clamd, smtp };
  }),
);
afterAll(async () => {
  for (const instance of instances) await cleanUpServer(instance.server, instance.dataDir);
  for (const clamd of clamds) await clamd.close();
  for (const smtp of smtps) await smtp.close();
  await database.drop();
  await s3.close();
});
await Promise.all(instances.map((instance) => waitForReady(instance.server, instance.url)));
const [doomed, survivor] = instances as [Instance, Instance];
const db = database.db;

/** `url` with the origin of `instance`: a link one instance made, followed to the other. */
const at = (instance: Instance, url: string) => `${instance.url}${url.slice(new URL(url).origin.length)}`;

async function until<T>(what: string, probe: () => Promise<T | undefined>, polls = 600): Promise<T> {
  for (let poll = 0; poll < polls; poll++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not after ${polls} polls`);
}

interface Owner {
  call: Call;
  dev: TestDeveloper;
  appId: string;
}

async function owner(instance: Instance, appBody: Record<string, unknown> = {}): Promise<Owner> {
  const dev = await registerDeveloper(instance.call);
  await setPlan(instance.call, shared.LATCHKEY_ADMIN_TOKEN, dev.id, 'pro');
  const app = await createApp(instance.call, dev, { platforms: ['linux-x64'], protection_level: 'none', ...appBody });
  return { call: instance.call, dev, appId: app.id };
}

/** POSTs an artifact as a multipart upload; null when the instance did not answer (killed). */
async function upload(instance: Instance, o: Owner, data: Buffer): Promise<{ status: number; body: any } | null> {
  const form = new FormData();
  form.append('platform', 'linux-x64');
  form.append('artifact', new Blob([new Uint8Array(data)]), 'tool.bin');
  try {
    const res = await fetch(`${instance.url}/v1/apps/${o.appId}/builds`, { method: 'POST', headers: { authorization: `Bearer ${o.dev.accessToken}` }, body: form });
    return { status: res.status, body: await res.json() };
  } catch {
    return null;
  }
}

const buildOf = (o: Owner, buildId: string, instance = survivor) =>
  instance.call('GET', `/v1/apps/${o.appId}/builds/${buildId}`, { token: o.dev.accessToken }).then((res) => res.body as Record<string, any>);

const settled = (o: Owner, buildId: string, instance = survivor) =>
  until(`build ${buildId} settled`, async () => {
    const build = await buildOf(o, buildId, instance);
    return build.status === 'READY' || build.status === 'FAILED' ? build : undefined;
  });

/** A store license's delivery link to a READY build of an app that allows `limit` downloads. */
async function storeDownload(o: Owner, artifact: Buffer): Promise<{ link: string; buildId: string }> {
  const uploaded = await upload(doomed, o, artifact);
  expect(uploaded?.status).toBe(201);
  expect(await settled(o, uploaded!.body.id)).toMatchObject({ status: 'READY' });
  const hook = await o.call('POST', `/v1/apps/${o.appId}/entitlement-webhook`, { token: o.dev.accessToken });
  expect(hook.status).toBe(201);
  const event = {
    app: 'notes-pro',
    shop: `shop-${randomBytes(5).toString('hex')}.myshopify.com`,
    entitled: true,
    event_id: `evt-${randomBytes(8).toString('hex')}`,
    occurred_at: new Date().toISOString(),
  };
  const grant = await doomed.call('POST', new URL(hook.body.webhook_url).pathname, { body: event, headers: { 'x-merchantops-secret': hook.body.secret } });
  expect(grant.body.action).toBe('granted');
  return { link: `${grant.body.delivery_url as string}/builds/${uploaded!.body.id}`, buildId: uploaded!.body.id };
}

/**
 * A delivery link followed on `instance`: `whole` when the whole artifact arrived; null when the
 * instance did not answer or the body was cut off. `hold`: after the first bytes, reading waits for it.
 */
async function download(instance: Instance, link: string, artifact: Buffer, hold?: Promise<void>): Promise<{ status: number; whole: boolean } | null> {
  try {
    const res = await fetch(at(instance, link));
    const chunks: Buffer[] = [];
    for await (const chunk of res.body ?? []) {
      if (hold && chunks.length === 0) await hold;
      chunks.push(Buffer.from(chunk));
    }
    return { status: res.status, whole: res.status === 200 && Buffer.concat(chunks).equals(artifact) };
  } catch {
    return null;
  }
}

/** The ids of the outbox emails a mail server received, one per message (Message-ID `<id@domain>`). */
const emailIdsReceived = (smtp: FakeSmtp) => smtp.received.map((raw) => /^Message-ID: <([^@>]+)@/im.exec(raw)?.[1]);

describe('instances starting at once', () => {
  it('migrate a new database once between them: the others wait for the first and find nothing left to do', async () => {
    // What every process does at start, from three pools at the same moment (knex alone fails all but one).
    const fresh = await createEmptyDatabase();
    const pools = [0, 1, 2].map(() => createDb(fresh.url));
    try {
      const results = await Promise.allSettled(pools.map((pool) => migrateToLatest(pool)));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      const runs = await fresh.db('knex_migrations').select('name');
      expect(runs.map((r) => r.name).sort()).toEqual(migrations.map((m) => m.name).sort());
    } finally {
      await Promise.all(pools.map((pool) => pool.destroy()));
      await fresh.drop();
    }
  });
});

describe('two server processes on one database and one bucket', () => {
  it('ran the migrations once between them, started together on an empty database', async () => {
    const runs = await db('knex_migrations').select('name');
    expect(runs.map((r) => r.name).sort()).toEqual(migrations.map((m) => m.name).sort());
  });

  it('share sign-in sessions, signed download links and the signing keys', async () => {
    const o = await owner(doomed);
    // A session made on one instance works, and refreshes, on the other.
    expect((await survivor.call('GET', '/v1/auth/me', { token: o.dev.accessToken })).status).toBe(200);
    const refreshed = await survivor.call('POST', '/v1/auth/refresh', { body: { refresh_token: o.dev.refreshToken } });
    expect(refreshed.status).toBe(200);
    expect((await doomed.call('GET', '/v1/auth/me', { token: refreshed.body.access_token })).status).toBe(200);

    // A download link signed by one instance downloads from the other.
    const artifact = randomBytes(4096);
    const uploaded = await upload(doomed, o, artifact);
    expect(uploaded?.status).toBe(201);
    expect(await settled(o, uploaded!.body.id)).toMatchObject({ status: 'READY' });
    const link = await doomed.call('GET', `/v1/apps/${o.appId}/builds/${uploaded!.body.id}/download`, { token: o.dev.accessToken });
    const fetched = await fetch(at(survivor, link.body.download_url));
    expect(fetched.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(artifact)).toBe(true);

    // A runtime token signed by one instance is refreshed by the other; both publish the same keys.
    const { license_key } = await createLicense(o.call, o.dev, { app_id: o.appId, device_limit: 2 });
    const activated = await doomed.call('POST', '/v1/licenses/activate', { body: { license_key, device_fingerprint: randomFingerprint() } });
    expect(activated.status).toBe(200);
    expect((await survivor.call('POST', '/v1/licenses/refresh', { body: { token: activated.body.token } })).status).toBe(200);
    expect((await survivor.call('GET', '/v1/public/keys')).body).toEqual((await doomed.call('GET', '/v1/public/keys')).body);
  });

  it("count one store license's download allowance over both: concurrent downloads get exactly the allowance", async () => {
    const o = await owner(doomed, { product_key: 'notes-pro', download_limit: 3 });
    const artifact = randomBytes(8192);
    const { link } = await storeDownload(o, artifact);

    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => download(instances[i % 2]!, link, artifact)));
    expect(answers.filter((a) => a?.status === 200 && a.whole)).toHaveLength(3);
    expect(answers.filter((a) => a?.status === 403)).toHaveLength(9);
  });

  it('send each email of the outbox once, whichever instance queued or sent it', async () => {
    const developers = await Promise.all(instances.map((instance) => registerDeveloper(instance.call)));
    const resets = await Promise.all(
      Array.from({ length: 12 }, (_, i) => instances[i % 2]!.call('POST', '/v1/auth/password-reset', { body: { email: developers[i % 2]!.email } })),
    );
    expect(resets.every((res) => res.status < 300)).toBe(true);
    const ids = developers.map((d) => d.id);
    const queued = await until('every email sent', async () => {
      const rows = await db('email_outbox').whereIn('developer_id', ids).where({ kind: 'password_reset' }).select('id', 'status');
      return rows.length === 12 && rows.every((r) => r.status === 'sent') ? rows.map((r) => String(r.id)) : undefined;
    });
    const received = smtps.flatMap(emailIdsReceived);
    expect(received.filter((id) => id !== undefined && queued.includes(id)).sort()).toEqual([...queued].sort());
  });

  it('lose no acknowledged write, count every download and run every job once when one of them is killed mid-storm', { timeout: 120_000 }, async () => {
    // 8 licenses, 25 activations each, far past their device limits; 50 uploads by 5 developers.
    const limits = [2, 3, 4, 5, 6, 8, 10, 12];
    const storeOwner = await owner(survivor);
    const licenses = await Promise.all(limits.map((device_limit) => createLicense(storeOwner.call, storeOwner.dev, { app_id: storeOwner.appId, device_limit })));
    const uploaders = await Promise.all(Array.from({ length: 5 }, (_, i) => owner(instances[i % 2]!)));
    const artifacts = Array.from({ length: 50 }, (_, i) => Buffer.concat([Buffer.from(`storm-build-${String(i).padStart(2, '0')}:`), randomBytes(2048)]));
    const markerOf = (stream: Buffer) => /storm-build-(\d\d):/.exec(stream.subarray(0, 32).toString('latin1'))?.[1];
    // A store license allowing 6 downloads of a 4 MiB build; two developers whose password resets queue emails.
    const DOWNLOAD_LIMIT = 6;
    const shop = await owner(survivor, { product_key: 'notes-pro', download_limit: DOWNLOAD_LIMIT });
    const downloadable = randomBytes(4 * 1024 * 1024);
    const { link, buildId: downloadedBuild } = await storeDownload(shop, downloadable);
    const mailed = await Promise.all(instances.map((instance) => registerDeveloper(instance.call)));

    // Half of each kind of request goes out before the kill, half after; the kill waits until the
    // doomed instance is in the middle of a protection job (its clamd holds a scan). Four downloads,
    // two on each instance, are in progress across the kill (their readers wait for it); the rest follow it.
    let killed!: () => void;
    const kill = new Promise<void>((resolve) => (killed = resolve));
    let activationsAnswered = 0;
    let uploadsSent = 0;
    let resetsSent = 0;
    const killer = until(
      'the doomed instance mid-job and the storm half done',
      async () => (doomed.clamd.pending > 0 && activationsAnswered >= 100 && uploadsSent >= 25 && resetsSent >= 10 ? true : undefined),
      900,
    ).then(() => {
      doomed.server.child.kill('SIGKILL');
      killed();
    });

    const activations = Array.from({ length: 200 }, (_, i) => ({ instance: instances[i % 2]!, license: licenses[i % limits.length]!, fingerprint: randomFingerprint() }));
    const activationAnswers: ({ status: number; code?: string } | null)[] = [];
    const activationWorkers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = w; i < activations.length; i += 8) {
        if (i >= 100) await kill;
        const { instance, license, fingerprint } = activations[i]!;
        activationAnswers[i] = await instance
          .call('POST', '/v1/licenses/activate', { body: { license_key: license.license_key, device_fingerprint: fingerprint } })
          .then((res) => ({ status: res.status, code: res.body?.error_code }))
          .catch(() => null);
        activationsAnswered++;
      }
    });
    const uploadAnswers: ({ status: number; body: any } | null)[] = [];
    const uploadWorkers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = w; i < artifacts.length; i += 4) {
        if (i >= 25) await kill;
        uploadsSent++;
        uploadAnswers[i] = await upload(instances[i % 2]!, uploaders[i % uploaders.length]!, artifacts[i]!);
      }
    });
    const downloads = Promise.all([
      ...Array.from({ length: 4 }, (_, i) => download(instances[i % 2]!, link, downloadable, kill)),
      ...Array.from({ length: 12 }, async (_, i) => {
        await kill;
        return download(instances[i % 2]!, link, downloadable);
      }),
    ]);
    const resetAnswers: ({ status: number } | null)[] = [];
    const resetWorkers = Array.from({ length: 2 }, async (_, w) => {
      for (let i = w; i < 20; i += 2) {
        if (i >= 10) await kill;
        resetsSent++;
        resetAnswers[i] = await instances[i % 2]!.call('POST', '/v1/auth/password-reset', { body: { email: mailed[i % 2]!.email } })
          .then((res) => ({ status: res.status }))
          .catch(() => null);
      }
    });
    await Promise.all([...activationWorkers, ...uploadWorkers, ...resetWorkers, killer]);
    const downloadAnswers = await downloads;
    await doomed.server.exited;

    // No answer was an error of ours; whatever failed, failed because its instance was gone.
    expect(activationAnswers.filter((a) => a && a.status >= 500)).toEqual([]);
    expect(uploadAnswers.filter((a) => a && a.status >= 500)).toEqual([]);
    activations.forEach((a, i) => {
      if (activationAnswers[i] === null) expect(a.instance).toBe(doomed);
    });
    expect(resetAnswers.filter((a) => a && a.status >= 300)).toEqual([]);
    resetAnswers.forEach((a, i) => {
      if (a === null) expect(instances[i % 2]).toBe(doomed);
    });

    // The download allowance exact: used up, never past it, and every download that arrived whole
    // counted once. A download the kill cut off may have been counted (its bytes were on their way).
    expect(downloadAnswers.filter((a) => a && !(a.status === 200 && a.whole) && a.status !== 403)).toEqual([]);
    downloadAnswers.forEach((a, i) => {
      if (a === null) expect(instances[i % 2]).toBe(doomed);
    });
    const whole = downloadAnswers.filter((a) => a?.whole).length;
    const cut = downloadAnswers.filter((a) => a === null).length;
    const counted = await db('store_license_downloads')
      .where({ build_id: downloadedBuild })
      .first(db.raw('coalesce(sum(bytes_served::numeric / size_bytes), 0)::float AS n'))
      .then((row) => Number(row.n));
    expect(counted).toBe(DOWNLOAD_LIMIT);
    expect(whole).toBeLessThanOrEqual(counted);
    expect(counted).toBeLessThanOrEqual(whole + cut);

    // Device limits exact: every license filled to its limit, never past it, with every acknowledged device.
    for (const [n, license] of licenses.entries()) {
      const devices = (await db('devices').where({ license_id: license.license_id }).select('fingerprint_hash')).map((d) => d.fingerprint_hash as string);
      const acknowledged = activations.filter((a, i) => a.license === license && activationAnswers[i]?.status === 200).map((a) => a.fingerprint);
      expect(devices).toHaveLength(limits[n]!);
      expect(devices).toEqual(expect.arrayContaining(acknowledged));
      const refused = activations.filter((a, i) => a.license === license && activationAnswers[i]?.status === 403);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((a) => activationAnswers[activations.indexOf(a)]!.code === 'DEVICE_LIMIT_EXCEEDED')).toBe(true);
    }

    // Every acknowledged upload protected and READY; no job left behind (the dead instance's taken over).
    const acknowledged = uploadAnswers.flatMap((a, i) => (a?.status === 201 ? [{ i, id: a.body.id as string, o: uploaders[i % uploaders.length]! }] : []));
    expect(acknowledged.length).toBeGreaterThan(25);
    for (const { id, o } of acknowledged) expect(await settled(o, id)).toMatchObject({ status: 'READY', scan_status: 'CLEAN' });
    await until('every protection job done', async () => (Number((await db('jobs').where({ kind: 'protect_build' }).count({ n: '*' }).first())!.n) === 0 ? true : undefined));
    const keys = await s3.keys();
    for (const { id } of acknowledged) expect(keys.some((k) => k.includes(`/builds/${id}/`))).toBe(true);

    // Each protection ran once per instance at most: twice only for a job the dead instance had taken,
    // which the survivor ran again; at least one such job (the kill waited for one in progress).
    const scansBy = (clamd: FakeClamd) => clamd.scanned.map(markerOf).filter((m) => m !== undefined);
    const [doomedScans, survivorScans] = [scansBy(doomed.clamd), scansBy(survivor.clamd)];
    expect(new Set(doomedScans).size).toBe(doomedScans.length);
    expect(new Set(survivorScans).size).toBe(survivorScans.length);
    expect(doomedScans.filter((m) => survivorScans.includes(m)).length).toBeGreaterThan(0);
    for (const { i } of acknowledged) expect([...doomedScans, ...survivorScans]).toContain(String(i).padStart(2, '0'));

    // Every queued email sent, each by one instance once. The one exception the outbox allows: an
    // email the dead instance's mail server had accepted before the instance could record it sent,
    // which the survivor sends again (same Message-ID).
    const mailedIds = mailed.map((d) => d.id);
    const queued = await until('every email of the storm sent', async () => {
      const rows = await db('email_outbox').whereIn('developer_id', mailedIds).where({ kind: 'password_reset' }).select('id', 'status');
      return rows.every((r) => r.status === 'sent') ? rows.map((r) => String(r.id)) : undefined;
    });
    // Every acknowledged reset queued its email (one the kill cut off may have too).
    expect(queued.length).toBeGreaterThanOrEqual(resetAnswers.filter((a) => a !== null).length);
    const [byDoomed, bySurvivor] = smtps.map((smtp) => emailIdsReceived(smtp).filter((id): id is string => id !== undefined && queued.includes(id)));
    expect(new Set(byDoomed).size).toBe(byDoomed!.length);
    expect(new Set(bySurvivor).size).toBe(bySurvivor!.length);
    expect([...new Set([...byDoomed!, ...bySurvivor!])].sort()).toEqual([...queued].sort());
    // At most the emails it was sending when killed: no more than the jobs a process runs at once (2 by default).
    expect(byDoomed!.filter((id) => bySurvivor!.includes(id)).length).toBeLessThanOrEqual(2);
  });
});
