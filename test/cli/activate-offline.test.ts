/**
 * Issue 22 item 3 in the CLI: `latchkey licenses activate-offline --request <file> --out <file>`
 * answers a customer's activation request file with the license file their app imports, under
 * every online activation rule (a full license refuses it and nothing is written).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyLicenseFile, verifyRuntimeToken, type JwkSet } from '../../runtime-sdk/protocol.js';
import { createLicense, randomFingerprint } from '../support/fixtures.js';
import { runLatchkey } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from '../licensing/world.js';

let server: TestServer;
let t: Tenant;
let keys: JwkSet;
beforeAll(async () => {
  server = await startTestServer();
  t = await tenant(server);
  keys = (await t.call('GET', '/v1/public/keys')).body as JwkSet;
});
afterAll(() => server.close());

const latchkey = (args: string[]) => runLatchkey(server.url, t.dev.apiKey, args);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-offline-'));

/** A request file as the SDK writes it, for a new device. */
function requestFile(name: string, licenseKey: string): { file: string; device: string; deviceKey: string } {
  const device = randomFingerprint();
  const deviceKey = randomBytes(32).toString('base64url');
  const request = {
    format: 'latchkey-activation-request/1',
    app_id: t.app.id,
    license_key: licenseKey,
    device_fingerprint: device,
    device_key: deviceKey,
    build_id: null,
    created_at: new Date().toISOString(),
  };
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(request, null, 2));
  return { file, device, deviceKey };
}

describe('latchkey licenses activate-offline', { timeout: 120_000 }, () => {
  it('writes a license file the SDK verifies for that device, and refuses a device over the limit with nothing written', async () => {
    const license = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1 });
    const first = requestFile('first.json', license.license_key);
    const out = path.join(dir, 'first.lic');
    const run = await latchkey(['licenses', 'activate-offline', '--request', first.file, '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Wrote the license file to .*first\.lic; the app must import it before \S+Z\n$/);

    const text = fs.readFileSync(out, 'utf8');
    const claims = verifyLicenseFile(text, keys, { appId: t.app.id, device: first.device, deviceKey: first.deviceKey, nowSeconds: Math.floor(Date.now() / 1000) });
    expect(verifyRuntimeToken(claims.token, keys, { appId: t.app.id, device: first.device }).sub).toBe(license.license_id);

    const second = requestFile('second.json', license.license_key);
    const refusedOut = path.join(dir, 'second.lic');
    const refused = await latchkey(['licenses', 'activate-offline', '--request', second.file, '--out', refusedOut, '--json']);
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stdout)).toMatchObject({ error_code: 'DEVICE_LIMIT_EXCEEDED', status_code: 403 });
    expect(fs.existsSync(refusedOut)).toBe(false);
  });

  it('refuses a file that is not a request file as a usage error', async () => {
    const notJson = path.join(dir, 'notes.txt');
    fs.writeFileSync(notJson, 'hello');
    const run = await latchkey(['licenses', 'activate-offline', '--request', notJson, '--out', path.join(dir, 'x.lic')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/not an activation request file/);

    const wrongFormat = path.join(dir, 'wrong.json');
    fs.writeFileSync(wrongFormat, JSON.stringify({ format: 'something-else' }));
    const refused = await latchkey(['licenses', 'activate-offline', '--request', wrongFormat, '--out', path.join(dir, 'y.lic')]);
    expect(refused.code).toBe(2);
    expect(fs.existsSync(path.join(dir, 'y.lic'))).toBe(false);
  });

  it('checks where the license file goes before it asks the server, and writes it whole, owner-only, replacing a link rather than following it', async () => {
    const license = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 1 });
    const request = requestFile('checked.json', license.license_key);
    const devicesOf = async () => ((await t.call('GET', `/v1/licenses/${license.license_id}`, { apiKey: t.dev.apiKey })).body as { devices: unknown[] }).devices.length;
    // A folder that does not exist, and a folder in place of the file: refused, and no activation counted.
    for (const out of [path.join(dir, 'missing', 'x.lic'), dir]) {
      const refused = await latchkey(['licenses', 'activate-offline', '--request', request.file, '--out', out]);
      expect(refused.code, out).toBe(2);
      expect(refused.stderr).toMatch(/--out/);
    }
    expect(await devicesOf()).toBe(0);

    // A link at the path (to a file the user can read by others) is replaced, its target untouched.
    const shared = path.join(dir, 'shared.txt');
    fs.writeFileSync(shared, 'not a license', { mode: 0o644 });
    const out = path.join(dir, 'linked.lic');
    fs.symlinkSync(shared, out);
    const run = await latchkey(['licenses', 'activate-offline', '--request', request.file, '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(fs.lstatSync(out).isSymbolicLink()).toBe(false);
    expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(shared, 'utf8')).toBe('not a license');
    expect(() =>
      verifyLicenseFile(fs.readFileSync(out, 'utf8'), keys, { appId: t.app.id, device: request.device, deviceKey: request.deviceKey, nowSeconds: Math.floor(Date.now() / 1000) }),
    ).not.toThrow();
    expect(fs.readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('writes to a pipe as it is (a FIFO, --out /dev/stdout in a shell), and prints the license file when the write fails after the activation', async () => {
    const license = await createLicense(t.call, t.dev, { app_id: t.app.id, device_limit: 2 });
    const verifies = (text: string, request: ReturnType<typeof requestFile>) =>
      verifyLicenseFile(text.trim(), keys, { appId: t.app.id, device: request.device, deviceKey: request.deviceKey, nowSeconds: Math.floor(Date.now() / 1000) });

    const piped = requestFile('piped.json', license.license_key);
    const fifo = path.join(dir, 'license.pipe');
    execFileSync('mkfifo', [fifo]);
    const read = fs.promises.readFile(fifo, 'utf8');
    const run = await latchkey(['licenses', 'activate-offline', '--request', piped.file, '--out', fifo]);
    expect(run.code, run.stderr).toBe(0);
    const received = await read;
    expect(() => verifies(received, piped)).not.toThrow();
    expect(fs.statSync(fifo).isFIFO()).toBe(true);

    // /proc passes the folder check (it exists, and root may write there) but takes no new file.
    const lost = requestFile('lost.json', license.license_key);
    const failed = await latchkey(['licenses', 'activate-offline', '--request', lost.file, '--out', '/proc/latchkey-test.lic']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/the activation is recorded, and its license file was printed to stdout instead/);
    expect(() => verifies(failed.stdout, lost)).not.toThrow();
  });
});
