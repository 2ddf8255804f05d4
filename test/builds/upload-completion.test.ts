import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../server/db/embedded.js';
import { createTestDatabase } from '../support/database.js';
import { createApp, registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client, type Call } from '../support/http.js';
import { cleanUpServer, spawnServer, waitForReady, type ServerProcess } from '../support/server-process.js';

// Issue 24: completing a resumable upload ends its session in the build's own transaction. A server
// process killed (SIGKILL) after the chunks were joined but before the build committed leaves the
// session as it was, so the client completes it again; two completes of one session make one build.
// The kill is placed by a real database condition: the test holds a lock on the builds table, so the
// build's insert waits there, visibly in pg_stat_activity, until the process is gone.

const database = await createTestDatabase();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-upload-completion-'));
const env = {
  DATABASE_URL: database.url,
  LATCHKEY_MASTER_KEY: randomBytes(32).toString('base64'),
  LATCHKEY_SIGNING_KEYS: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
  LATCHKEY_DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
};

interface Instance {
  url: string;
  server: ServerProcess;
  call: Call;
}

const started: Instance[] = [];
/** A server process on the test's database and data directory (one at a time: a directory has one process). */
async function startInstance(): Promise<Instance> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = spawnServer({ ...env, PORT: String(port), PUBLIC_BASE_URL: url });
  started.push({ url, server, call: client(url) });
  await waitForReady(server, url);
  return started.at(-1)!;
}
afterAll(async () => {
  for (const { server } of started) await cleanUpServer(server, undefined);
  fs.rmSync(dataDir, { recursive: true, force: true });
  await database.drop();
});

const CHUNK = 256 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Owner {
  dev: TestDeveloper;
  appId: string;
}

async function owner(instance: Instance): Promise<Owner> {
  const dev = await registerDeveloper(instance.call);
  const app = await createApp(instance.call, dev, { platforms: ['linux-x64'], protection_level: 'none' });
  return { dev, appId: app.id };
}

/** A session with every byte of `file` sent, in chunks. */
async function uploaded(instance: Instance, o: Owner, file: Buffer): Promise<string> {
  const started = await instance.call('POST', `/v1/apps/${o.appId}/uploads`, {
    token: o.dev.accessToken,
    body: { filename: 'tool.bin', size_bytes: file.length, sha256: sha256(file), platform: 'linux-x64' },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  for (let offset = 0; offset < file.length; offset += CHUNK) {
    const res = await fetch(`${instance.url}/v1/apps/${o.appId}/uploads/${started.body.id}?offset=${offset}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${o.dev.accessToken}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(file.subarray(offset, offset + CHUNK)),
    });
    expect(res.status).toBe(200);
  }
  return started.body.id as string;
}

const complete = (instance: Instance, o: Owner, id: string) => instance.call('POST', `/v1/apps/${o.appId}/uploads/${id}/complete`, { token: o.dev.accessToken });
const sessionOf = (instance: Instance, o: Owner, id: string) => instance.call('GET', `/v1/apps/${o.appId}/uploads/${id}`, { token: o.dev.accessToken });
const buildIds = async (instance: Instance, o: Owner) =>
  ((await instance.call('GET', `/v1/apps/${o.appId}/builds`, { token: o.dev.accessToken })).body as { id: string }[]).map((b) => b.id);
/** The session's stored chunks, on disk under the data directory. */
const chunksOf = (id: string) => {
  const dir = path.join(dataDir, 'storage', 'uploads', id);
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};
/** The builds whose folder in storage holds a file. */
const storedBuildsOf = (o: Owner) => {
  const dir = path.join(dataDir, 'storage', 'apps', o.appId, 'builds');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((build) => fs.readdirSync(path.join(dir, build)).length > 0);
};

describe('completing a resumable upload', () => {
  it('keeps the session when the server dies before the build commits: completing it again makes the one build', { timeout: 120_000 }, async () => {
    const first = await startInstance();
    const o = await owner(first);
    const file = randomBytes(3 * CHUNK + 17);
    const id = await uploaded(first, o, file);
    expect(chunksOf(id)).toHaveLength(4);

    const blocker = await database.db.transaction();
    try {
      await blocker.raw('LOCK TABLE builds IN EXCLUSIVE MODE');
      const completing = complete(first, o, id).catch(() => null);
      // Bounded: the joined chunks are staged and checked, then the insert waits on the lock.
      let waiting = false;
      for (let poll = 0; poll < 600 && !waiting; poll++) {
        const { rows } = await database.db.raw<{ rows: { n: number }[] }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE 'insert into "builds"%'`,
        );
        waiting = rows[0]!.n > 0;
        if (!waiting) await new Promise((r) => setTimeout(r, 100));
      }
      expect(waiting).toBe(true);
      first.server.child.kill('SIGKILL');
      expect(await completing).toBeNull();
      await first.server.exited;
    } finally {
      await blocker.rollback();
    }

    // The session is there, whole, with its chunks; no build was made.
    const second = await startInstance();
    const session = await sessionOf(second, o, id);
    expect(session.status).toBe(200);
    expect(session.body.offset).toBe(file.length);
    expect(chunksOf(id)).toHaveLength(4);
    expect(await buildIds(second, o)).toEqual([]);

    const done = await complete(second, o, id);
    expect(done.status, JSON.stringify(done.body)).toBe(201);
    expect(done.body).toMatchObject({ status: 'QUEUED', artifact_size_bytes: file.length });
    expect(await buildIds(second, o)).toEqual([done.body.id]);
    // Ended with its build: gone, its chunks removed.
    expect((await sessionOf(second, o, id)).body.error_code).toBe('UPLOAD_NOT_FOUND');
    expect(chunksOf(id)).toEqual([]);
  });

  it('makes one build of two completes at once: the other is told the session is gone', async () => {
    const instance = started.find((i) => i.server.child.exitCode === null && i.server.child.signalCode === null) ?? (await startInstance());
    const o = await owner(instance);
    const file = randomBytes(2 * CHUNK + 5);
    const id = await uploaded(instance, o, file);

    const answers = await Promise.all([complete(instance, o, id), complete(instance, o, id)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 404]);
    const made = answers.find((a) => a.status === 201)!.body;
    expect(answers.find((a) => a.status === 404)!.body.error_code).toBe('UPLOAD_NOT_FOUND');
    expect(await buildIds(instance, o)).toEqual([made.id]);
    // The loser's copy of the artifact is not kept beside the build; the chunks are gone.
    expect(storedBuildsOf(o)).toEqual([made.id]);
    expect(chunksOf(id)).toEqual([]);
  });
});
