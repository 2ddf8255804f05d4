/**
 * `latchkey doctor` checks a deployment as an operator runs it: the built CLI against a real
 * server and PostgreSQL, each check failing for the reason it names.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runLatchkey } from '../support/cli.js';
import { startTestServer } from '../support/server.js';

const server = await startTestServer();
afterAll(() => server.close());

const doctor = (env: Record<string, string> = {}, args: string[] = []) => runLatchkey(server.url, '', ['doctor', ...args], env);
const asAdmin = { LATCHKEY_ADMIN_TOKEN: server.adminToken };

interface Check {
  check: string;
  status: string;
  detail: string;
}

async function checks(env: Record<string, string>): Promise<{ code: number; byName: Record<string, Check> }> {
  const run = await doctor(env, ['--json']);
  expect(run.stderr).toBe('');
  const list = JSON.parse(run.stdout) as Check[];
  return { code: run.code, byName: Object.fromEntries(list.map((c) => [c.check, c])) };
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('latchkey doctor', { timeout: 60_000 }, () => {
  it('passes every check of a healthy deployment, as a table and as JSON', async () => {
    const table = await doctor(asAdmin);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^CHECK\s+STATUS\s+DETAIL$/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/).slice(0, 2))).toEqual([
      ['server', 'ok'],
      ['database', 'ok'],
      ['migrations', 'ok'],
      ['storage', 'ok'],
      ['signing keys', 'ok'],
      ['clock', 'ok'],
      ['public URL', 'ok'],
    ]);
    const { code, byName } = await checks(asAdmin);
    expect(code).toBe(0);
    expect(byName.migrations!.detail).toMatch(/migrations applied, none pending/);
    // The storage probe leaves nothing behind.
    const probes = path.join(server.dataDir, 'storage', 'diagnostics');
    expect(fs.existsSync(probes) ? fs.readdirSync(probes) : []).toEqual([]);
  });

  it('skips the operator checks without LATCHKEY_ADMIN_TOKEN and refuses a wrong one (exit 3)', async () => {
    const { code, byName } = await checks({});
    expect(code).toBe(0);
    expect(byName.server!.status).toBe('ok');
    expect(byName.storage).toMatchObject({ status: 'skipped', detail: expect.stringMatching(/LATCHKEY_ADMIN_TOKEN/) });

    const wrong = await doctor({ LATCHKEY_ADMIN_TOKEN: 'x'.repeat(48) });
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/LATCHKEY_ADMIN_TOKEN/);
    expect(wrong.stderr).not.toContain('x'.repeat(48));
  });

  it('fails (exit 1) on a server clock a minute off, a pending migration and storage that takes no writes', async () => {
    const storage = path.join(server.dataDir, 'storage');
    const moved = `${storage}.moved`;
    const db = server.database.db;
    const last = await db('knex_migrations').orderBy('id', 'desc').first();
    server.clock.advance(60_000);
    fs.renameSync(storage, moved);
    fs.writeFileSync(storage, 'not a folder');
    await db('knex_migrations').where({ id: last.id }).delete();
    try {
      const { code, byName } = await checks(asAdmin);
      expect(code).toBe(1);
      expect(byName.clock).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^the server's clock is 6\d\.\d s ahead of this machine's/) });
      expect(byName.migrations).toMatchObject({ status: 'fail', detail: expect.stringContaining(last.name) });
      expect(byName.storage!.status).toBe('fail');
      expect(byName.database!.status).toBe('ok');
    } finally {
      await db('knex_migrations').insert(last);
      fs.rmSync(storage);
      fs.renameSync(moved, storage);
      server.clock.advance(-60_000);
    }
  });

  it('fails (exit 1) on a server that does not answer and on a public URL that reaches nothing', async () => {
    const down = await runLatchkey(`http://127.0.0.1:${await closedPort()}`, '', ['doctor', '--json']);
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout)).toEqual([{ check: 'server', status: 'fail', detail: expect.stringMatching(/cannot reach/) }]);

    const misnamed = await startTestServer({ env: { PUBLIC_BASE_URL: `http://127.0.0.1:${await closedPort()}` } });
    try {
      const run = await runLatchkey(misnamed.url, '', ['doctor', '--json'], { LATCHKEY_ADMIN_TOKEN: misnamed.adminToken });
      expect(run.code).toBe(1);
      const publicUrl = (JSON.parse(run.stdout) as Check[]).find((c) => c.check === 'public URL');
      expect(publicUrl).toMatchObject({ status: 'fail', detail: expect.stringMatching(/cannot reach/) });
    } finally {
      await misnamed.close();
    }
  });

  it('refuses (exit 2) to send LATCHKEY_ADMIN_TOKEN over plain http to a host that is not loopback, unless --allow-http', async () => {
    // A server on this machine's own network address (not loopback) that records what it is sent.
    const address = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    expect(address, 'this test needs a network interface besides loopback').toBeDefined();
    const authorizations: string[] = [];
    const recorder = http.createServer((req, res) => {
      if (req.headers.authorization) authorizations.push(req.headers.authorization);
      res.writeHead(req.url === '/healthz' || req.url === '/readyz' ? 200 : 404, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => recorder.listen(0, address, resolve));
    const remote = `http://${address}:${(recorder.address() as net.AddressInfo).port}`;
    try {
      const refused = await doctor(asAdmin, ['--url', remote]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/LATCHKEY_ADMIN_TOKEN.*http:\/\/.*--allow-http/s);
      expect(refused.stderr).not.toContain(server.adminToken);
      expect(authorizations).toEqual([]);

      // Allowed explicitly (a private network): the token is sent.
      const allowed = await doctor(asAdmin, ['--url', remote, '--allow-http']);
      expect(allowed.code).toBe(3);
      expect(authorizations).toEqual([`Bearer ${server.adminToken}`]);
    } finally {
      await new Promise((resolve) => recorder.close(resolve));
    }

    // Loopback by name is fine without the flag.
    const local = await doctor(asAdmin, ['--url', server.url.replace('127.0.0.1', 'localhost'), '--json']);
    expect(local.code, local.stderr).toBe(0);
  });
});
