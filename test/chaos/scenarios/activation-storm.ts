import { randomBytes } from 'node:crypto';
import { createDb } from '../../../server/db/knex.js';
import { seedApp, seedDeveloper, seedLicense, seedMany, seedProPlan } from '../../bench/seed.js';
import { client } from '../../support/http.js';
import { chaosClient, deliverThroughACrash, retryServerErrors } from '../client.js';
import type { ChaosDatabase, LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';
import { shuffle } from '../../support/random.js';

const LICENSES = 40;
const DEVICE_LIMIT = 3;
/** Each license is asked for far more devices than its limit, all at once. */
const DEVICES_PER_LICENSE = 8;
const CONCURRENCY = 32;
const ACTIVATE = 'POST /v1/licenses/activate';

/**
 * Many devices activate many licenses at once; the server is killed (SIGKILL) a third of the way in
 * and started again. Devices retry like the SDK does (network failures and 5xx). Afterwards no
 * license holds more devices than its limit, its slot counter matches its devices, and every
 * activation that was answered 200 is recorded.
 */
export async function activationStorm(sheet: FigureSheet, db: ChaosDatabase, server: LatchkeyProcess, random: () => number): Promise<void> {
  const call = client(server.url);
  const dev = await seedDeveloper(call);
  await seedProPlan(call, server.adminToken, dev);
  const app = await seedApp(call, dev, 'Activation storm');
  const licenses = await seedMany(LICENSES, () => seedLicense(call, dev, { app_id: app.id, device_limit: DEVICE_LIMIT }));

  const devices = licenses.flatMap((license) =>
    Array.from({ length: DEVICES_PER_LICENSE }, () => ({ license, fingerprint: randomBytes(32).toString('hex'), granted: false, answered: false })),
  );
  // Shuffled, so every license is contended throughout the run.
  shuffle(devices, random);

  const http = chaosClient(sheet, server.url);
  const fault = 'server SIGKILL during the activation storm, then restarted';
  await deliverThroughACrash(sheet, server, devices, { concurrency: CONCURRENCY, killAfter: Math.floor(devices.length / 3), fault }, async (device) => {
    const answer = await http.sendWithRetries(
      ACTIVATE,
      'POST',
      '/v1/licenses/activate',
      { body: { license_key: device.license.license_key, device_fingerprint: device.fingerprint, build_id: null } },
      retryServerErrors(60, 250),
    );
    device.answered = answer !== undefined && answer.status < 500;
    device.granted = answer?.status === 200;
    if (answer && answer.status !== 200 && answer.body?.error_code !== 'DEVICE_LIMIT_EXCEEDED') {
      sheet.violated(1, `activation answered ${answer.status} ${answer.body?.error_code}`);
    }
  });
  sheet.violated(devices.filter((d) => !d.answered).length, 'activations never answered after the restart');

  const observer = createDb(db.url, { max: 2 });
  try {
    const rows: { id: string; device_count: number; devices: number }[] = await observer('licenses')
      .where({ app_id: app.id })
      .select('id', 'device_count', observer.raw('(SELECT count(*)::int FROM devices WHERE devices.license_id = licenses.id) AS devices'));
    sheet.violated(rows.filter((r) => r.devices > DEVICE_LIMIT).length, `licenses holding more than ${DEVICE_LIMIT} devices`);
    sheet.violated(rows.filter((r) => r.device_count !== r.devices).length, 'licenses whose slot counter differs from their devices');
    const recorded = new Set(
      (
        await observer('devices')
          .whereIn(
            'license_id',
            rows.map((r) => r.id),
          )
          .select('license_id', 'fingerprint_hash')
      ).map((d) => `${d.license_id}/${d.fingerprint_hash}`),
    );
    const granted = devices.filter((d) => d.granted);
    sheet.lost(granted.filter((d) => !recorded.has(`${d.license.license_id}/${d.fingerprint}`)).length, 'activations answered 200 but not recorded');
    sheet.note(`activation storm: ${devices.length} devices on ${LICENSES} licenses (limit ${DEVICE_LIMIT}): ${granted.length} granted, ${recorded.size} recorded`);
  } finally {
    await observer.destroy();
  }
}
