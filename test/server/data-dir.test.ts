import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../server/db/embedded.js';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { settled, uploadBuild, type Owner } from '../builds/support.js';
import { createApp, registerDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { cleanUpServer, killSpawnedServers, READY_TIMEOUT_MS, spawnServer, waitForReady, type ServerProcess } from '../support/server-process.js';
import type { TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

// The real server (`server/dist/main.js`) on the embedded default, as `npm start` runs it: what it
// leaves on disk under its data directory, what it sweeps at start, and what its access log says.

let dataDir: string;
let url: string;
let server: ServerProcess;
/** The server's system temporary directory (TMPDIR), watched while it starts. */
let serverTemp: string;
let tempWatcher: fs.FSWatcher;
const createdInTemp: string[] = [];
/** Scratch space a crashed job left (inside the data directory) and one an earlier version left in the system's. */
let crashedWork: string;
let legacyWork: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-data-dir-'));
  // What an earlier version left readable by everyone, at the top of the data directory.
  fs.mkdirSync(path.join(dataDir, 'storage'), { mode: 0o755 });
  fs.chmodSync(path.join(dataDir, 'storage'), 0o755);
  fs.writeFileSync(path.join(dataDir, 'master.key'), randomBytes(32).toString('base64url'));
  fs.chmodSync(path.join(dataDir, 'master.key'), 0o644);
  crashedWork = path.join(dataDir, 'scratch', 'bld_crashed-a1b2c3');
  fs.mkdirSync(crashedWork, { recursive: true });
  fs.writeFileSync(path.join(crashedWork, 'artifact'), 'half an unpacked upload');
  serverTemp = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-data-dir-tmp-'));
  fs.chmodSync(serverTemp, 0o1777); // as /tmp is: every user may create files in it
  tempWatcher = fs.watch(serverTemp, (_event, name) => void (name && createdInTemp.push(name)));
  legacyWork = fs.mkdtempSync(path.join(serverTemp, `latchkey-bld_${randomBytes(6).toString('hex')}-`));
  fs.writeFileSync(path.join(legacyWork, 'artifact'), 'left by an older version');
  const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
  fs.utimesSync(legacyWork, twoDaysAgo, twoDaysAgo);

  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  server = spawnServer({ PORT: String(port), LATCHKEY_DATA_DIR: dataDir, LOG_LEVEL: 'info', TMPDIR: serverTemp });
  await waitForReady(server, url);
}, READY_TIMEOUT_MS + 10_000);

afterAll(async () => {
  tempWatcher?.close();
  await cleanUpServer(server, dataDir);
  fs.rmSync(serverTemp, { recursive: true, force: true });
  killSpawnedServers();
}, 30_000);

/** Every entry under the data directory but PostgreSQL's own cluster, with its mode. */
function walk(dir: string): { file: string; mode: number; isDir: boolean }[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .map((d) => path.join(d.parentPath, d.name))
    .filter((file) => !path.relative(dataDir, file).split(path.sep).includes('pg') || path.relative(dataDir, file) === 'pg')
    .map((file) => {
      const stat = fs.lstatSync(file);
      return { file: path.relative(dataDir, file), mode: stat.mode & 0o777, isDir: stat.isDirectory() };
    });
}

const octal = (mode: number) => `0${mode.toString(8)}`;

describe('scratch space at start', () => {
  it('is swept: what a crashed job left in the data directory, and old work directories in the system temporary directory', () => {
    expect(fs.existsSync(crashedWork)).toBe(false);
    expect(fs.existsSync(legacyWork)).toBe(false);
    expect(server.output()).toContain('removed scratch directories that interrupted work left behind');
  });
});

describe('the embedded cluster’s password', () => {
  it('is never written to the system temporary directory, not even for the moment initdb reads it', () => {
    expect(createdInTemp.filter((name) => name.startsWith('pg-password'))).toEqual([]);
    expect(fs.statSync(path.join(dataDir, 'pg-password')).mode & 0o777).toBe(0o600);
  });
});

describe('files under the data directory', () => {
  it('are the server user’s alone after uploads, a protection and a failed scan: files 0600, directories 0700', async () => {
    const call = client(url);
    const dev = await registerDeveloper(call);
    const app = await createApp(call, dev);
    const o: Owner = { server: { url } as TestServer, call, dev, app };
    const protectedBuild = await settled(o, (await uploadBuild(o, { data: "console.log('hello');\n", name: 'main.js' }, { version: '1.0.0' })).id);
    expect(protectedBuild).toMatchObject({ status: 'READY', package_format: 'javascript_bundle' });
    const refused = await settled(o, (await uploadBuild(o, { data: new Uint8Array(EICAR_SIGNATURE), name: 'eicar.com' })).id);
    expect(refused).toMatchObject({ status: 'FAILED', scan_status: 'INFECTED' });

    // A job's work directory goes in its `finally`, after the build's status is committed.
    await eventually('the work directories to be gone', async () => fs.readdirSync(path.join(dataDir, 'scratch')).length === 0, 50);
    const entries = walk(dataDir);
    // Stored artifacts and packages, staging, keys, the cluster's password are all there to check.
    expect(entries.map((e) => e.file)).toEqual(expect.arrayContaining(['master.key', 'signing-keys.pem', 'pg-password', 'latchkey.lock', 'storage', 'scratch', 'pg']));
    expect(entries.filter((e) => !e.isDir && e.file.startsWith('storage')).length).toBeGreaterThanOrEqual(2);
    const exposed = entries.filter((e) => (e.mode & 0o077) !== 0).map((e) => `${e.file} ${octal(e.mode)}`);
    expect(exposed).toEqual([]);
    // The data directory itself: 0700, or, as root, 0711 so that PostgreSQL's own user reaches its cluster (no listing).
    const top = fs.statSync(dataDir).mode & 0o777;
    expect(top).toBe(os.userInfo().uid === 0 ? 0o711 : 0o700);
    // No work directory outlives its job, finished or failed.
    expect(fs.readdirSync(path.join(dataDir, 'scratch'))).toEqual([]);
  }, 60_000);
});

describe('the access log', () => {
  it('shows no token, key, signature, code or credential header, and still says which request it was', async () => {
    const secrets = {
      signature: `sig${randomBytes(8).toString('hex')}`,
      accessToken: `tok${randomBytes(8).toString('hex')}`,
      apiKeyParam: `key${randomBytes(8).toString('hex')}`,
      state: `state${randomBytes(8).toString('hex')}`,
      code: `code${randomBytes(8).toString('hex')}`,
      clientSecret: `secret${randomBytes(8).toString('hex')}`,
      authorization: `auth${randomBytes(8).toString('hex')}`,
      apiKeyHeader: `hdr${randomBytes(8).toString('hex')}`,
      cookie: `cookie${randomBytes(8).toString('hex')}`,
      delivery: `dlv${randomBytes(8).toString('hex')}`,
      webhook: `whk${randomBytes(8).toString('hex')}`,
      redemption: `RDM${randomBytes(8).toString('hex')}`,
    };
    const headers = { authorization: `Bearer ${secrets.authorization}`, 'x-api-key': secrets.apiKeyHeader, cookie: `lk_portal=${secrets.cookie}` };
    const requests: [string, string][] = [
      ['GET', `/v1/downloads/bld_unknown?expires=4102444800&signature=${secrets.signature}`],
      [
        'GET',
        `/v1/apps?access_token=${secrets.accessToken}&apiKey=${secrets.apiKeyParam}&STATE=${secrets.state}&code=${secrets.code}&client_secret=${secrets.clientSecret}&limit=5`,
      ],
      ['GET', `/d/${secrets.delivery}`],
      ['POST', `/v1/entitlement-webhooks/${secrets.webhook}/trial`],
      ['POST', `/v1/redemption-codes/${secrets.redemption}/revoke`],
      ['POST', `/portal/api/v1/redemption-codes/${secrets.redemption}/revoke`],
    ];
    for (const [method, path] of requests) await (await fetch(`${url}${path}`, { method, headers })).arrayBuffer();
    // The lines are written as the requests end; wait (bounded) for the last one.
    for (let i = 0; i < 50 && !server.output().includes('/portal/api/v1/redemption-codes/'); i++) await new Promise((r) => setTimeout(r, 100));

    const log = server.output();
    for (const [name, value] of Object.entries(secrets)) expect(log, `${name} in the log`).not.toContain(value);
    expect(log).toContain('/v1/downloads/bld_unknown?expires=4102444800&signature=%5Bredacted%5D');
    expect(log).toContain('limit=5');
    expect(log).toContain('"url":"/d/[redacted]"');
    expect(log).toContain('/v1/entitlement-webhooks/[redacted]/trial');
  });
});
