import { randomBytes } from 'node:crypto';
import { createDb } from '../../../server/db/knex.js';
import { seedApp, seedDeveloper, seedLicense, seedProPlan } from '../../bench/seed.js';
import { client } from '../../support/http.js';
import type { ApiResponse } from '../../support/http.js';
import { chaosClient } from '../client.js';
import type { ChaosDatabase, LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';

const WORKERS = 12;
const BEFORE_MS = 2_000;
const OUTAGE_MS = 4_000;
const AFTER_MS = 3_000;
/** How long the server may take to serve again once PostgreSQL is back. */
const RECOVERY_LIMIT_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Steady load of writes and reads (license creation, activations, lists) while PostgreSQL is
 * stopped and started again. Meanwhile the server must answer 503 (never a 500, never hang, never
 * die), serve again by itself once the database is back, and have lost nothing it acknowledged.
 */
export async function databaseRestart(sheet: FigureSheet, db: ChaosDatabase, server: LatchkeyProcess): Promise<void> {
  const call = client(server.url);
  const dev = await seedDeveloper(call);
  await seedProPlan(call, server.adminToken, dev);
  const app = await seedApp(call, dev, 'Database restart');
  const roomy = await seedLicense(call, dev, { app_id: app.id, device_limit: 10_000 });

  const http = chaosClient(sheet, server.url);
  const createdLicenses: string[] = [];
  const activatedDevices: string[] = [];
  let unexpected = 0;
  const judge = (answer: ApiResponse | undefined, ok: number, outage: boolean) => {
    // While the database is down the only honest answer is 503; otherwise the operation's own.
    if (answer === undefined) sheet.note('a request got no answer while the server process was up');
    else if (answer.status !== ok && !(outage && answer.status === 503)) unexpected++;
  };

  let outage = false;
  let running = true;
  const worker = async (n: number) => {
    for (let i = 0; running; i++) {
      const during = outage;
      switch ((n + i) % 3) {
        case 0: {
          const answer = await http.send('POST /v1/licenses', 'POST', '/v1/licenses', { apiKey: dev.apiKey, body: { app_id: app.id } });
          judge(answer, 201, during || outage);
          if (answer?.status === 201) createdLicenses.push(answer.body.license_id);
          break;
        }
        case 1: {
          const fingerprint = randomBytes(32).toString('hex');
          const answer = await http.send('POST /v1/licenses/activate', 'POST', '/v1/licenses/activate', {
            body: { license_key: roomy.license_key, device_fingerprint: fingerprint, build_id: null },
          });
          judge(answer, 200, during || outage);
          if (answer?.status === 200) activatedDevices.push(fingerprint);
          break;
        }
        default:
          judge(await http.send('GET /v1/licenses', 'GET', `/v1/licenses?app_id=${app.id}&limit=5`, { apiKey: dev.apiKey }), 200, during || outage);
      }
      // A request that failed fast must not spin the loop.
      if (outage) await sleep(20);
    }
  };
  const load = Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n)));

  await sleep(BEFORE_MS);
  const over = sheet.fault('PostgreSQL stopped under load, then started again');
  outage = true;
  await db.stop();
  await sleep(OUTAGE_MS);
  await db.start();
  const backAt = Date.now();
  let recoveredMs: number | undefined;
  while (Date.now() - backAt < RECOVERY_LIMIT_MS) {
    const ready = await http.send('GET /readyz', 'GET', '/readyz');
    if (ready?.status === 200) {
      recoveredMs = Date.now() - backAt;
      break;
    }
    await sleep(100);
  }
  // Requests already in flight when the database came back may still fail over to 503.
  await sleep(1_000);
  outage = false;
  over();
  await sleep(AFTER_MS);
  running = false;
  await load;

  if (recoveredMs === undefined) sheet.violated(1, `server not ready ${RECOVERY_LIMIT_MS} ms after PostgreSQL came back`);
  else sheet.note(`database restart: ready again ${recoveredMs} ms after PostgreSQL came back`);
  sheet.violated(unexpected, "answers other than the operation's own or 503 during the outage");
  const afterwards = await http.send('POST /v1/licenses', 'POST', '/v1/licenses', { apiKey: dev.apiKey, body: { app_id: app.id } });
  if (afterwards?.status !== 201) sheet.violated(1, `license creation after recovery answered ${afterwards?.status}`);
  // The API-key cache listens for revocations on its own connection, which the restart cut: a key
  // rotated now must stop working at once all the same.
  const rotated = await http.send('POST /v1/auth/api-keys/rotate', 'POST', '/v1/auth/api-keys/rotate', { token: dev.accessToken, body: { password: dev.password } });
  const stale = await http.send('GET /v1/licenses', 'GET', '/v1/licenses?limit=1', { apiKey: dev.apiKey });
  if (rotated?.status !== 200 || stale?.status !== 401) sheet.violated(1, `an API key rotated after the restart still answered ${stale?.status} (rotation ${rotated?.status})`);

  const observer = createDb(db.url, { max: 2 });
  try {
    const licenses = new Set((await observer('licenses').where({ app_id: app.id }).select('id')).map((r) => r.id as string));
    sheet.lost(createdLicenses.filter((id) => !licenses.has(id)).length, 'licenses answered 201 but not stored');
    const devices = new Set((await observer('devices').where({ license_id: roomy.license_id }).select('fingerprint_hash')).map((r) => r.fingerprint_hash as string));
    sheet.lost(activatedDevices.filter((f) => !devices.has(f)).length, 'activations answered 200 but not recorded');
    sheet.note(`database restart: ${createdLicenses.length} licenses created and ${activatedDevices.length} devices activated around the outage`);
  } finally {
    await observer.destroy();
  }
}
