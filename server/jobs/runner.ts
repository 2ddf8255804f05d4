import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { hotQuery, type Db } from '../db/knex.js';
import type { JobKind, JobPayloads, JobQueue } from './queue.js';

/**
 * What runs one kind of job. `run` may be interrupted at any point (a crash, a deploy): the job is
 * then run again from the start, so it must be idempotent. A thrown error is retried with backoff
 * until the job's attempts are used up; then `giveUp` records the failure.
 */
export interface JobHandler<K extends JobKind = JobKind> {
  kind: K;
  run(payload: JobPayloads[K], context: { attempt: number; signal: AbortSignal }): Promise<void>;
  giveUp(payload: JobPayloads[K], reason: string): Promise<void>;
}

export interface JobRunnerOptions {
  concurrency: number;
  /** How long a claimed job stays its runner's without a heartbeat; after that, another runner takes it. */
  leaseSeconds?: number;
  /** How often an idle runner looks for jobs other processes enqueued. */
  pollMs?: number;
}

export interface JobRunner {
  start(): void;
  /** Stops claiming, interrupts running jobs and hands them back (not counted as attempts). */
  stop(): Promise<void>;
}

interface ClaimedJob {
  id: number;
  kind: JobKind;
  payload: JobPayloads[JobKind];
  attempts: number;
  max_attempts: number;
  last_error: string | null;
}

const DEFAULT_LEASE_SECONDS = 60;
const DEFAULT_POLL_MS = 1000;
const MAX_RETRY_DELAY_SECONDS = 300;

/**
 * Runs jobs from the `jobs` table. A job is claimed with `FOR UPDATE SKIP LOCKED` and leased: its
 * runner renews the lease while it works, so a runner that dies (crash, kill, lost machine) lets the
 * lease lapse and any runner of any process claims the job again. Every claim counts an attempt, so
 * a job that keeps killing its runner is given up too, instead of crashing processes forever.
 */
export function createJobRunner(deps: { db: Db; queue: JobQueue; log: Logger; handlers: JobHandler[] }, options: JobRunnerOptions): JobRunner {
  const { db, log } = deps;
  const handlers = new Map(deps.handlers.map((h) => [h.kind, h as JobHandler]));
  const kinds = [...handlers.keys()];
  const leaseSeconds = options.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const runnerId = `runner_${randomUUID()}`;
  const running = new Map<number, { abort: AbortController; done: Promise<void> }>();
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  let filling: Promise<void> | undefined;
  let fillAgain = false;
  /**
   * Whether a claim may find a due job: false once one found none, until a job is enqueued here
   * (queue.wake), the poll comes round (other processes' jobs, retries coming due) or a slot was
   * full when jobs were left. Saves the empty claim after every job when jobs come one at a time.
   */
  let backlog = true;

  async function claim(): Promise<ClaimedJob | undefined> {
    // Lease times are the database's clock, the one every process shares.
    const rows = await hotQuery<ClaimedJob>(
      db,
      `UPDATE jobs SET attempts = attempts + 1, locked_by = $1, locked_until = now() + make_interval(secs => $2)
       WHERE id = (
         SELECT id FROM jobs
         WHERE kind = ANY($3) AND run_after <= now() AND (locked_until IS NULL OR locked_until < now())
         ORDER BY run_after, id
         LIMIT 1
         FOR UPDATE SKIP LOCKED)
       RETURNING id, kind, payload, attempts, max_attempts, last_error`,
      [runnerId, leaseSeconds, kinds],
    );
    return rows[0];
  }

  /** Only while this runner still holds the job: a runner that lost its lease changes nothing. */
  const mine = (id: number) => db('jobs').where({ id, locked_by: runnerId });
  /** The end of every job that ran (done or given up): the one statement each job always costs, prepared. */
  const finish = (id: number) => hotQuery(db, 'DELETE FROM jobs WHERE id = $1 AND locked_by = $2', [id, runnerId], 'jobs.finish');

  async function execute(job: ClaimedJob, abort: AbortController): Promise<void> {
    const handler = handlers.get(job.kind)!;
    if (job.attempts > job.max_attempts) {
      // The previous attempts ended without a word: their runners died mid-job.
      await handler.giveUp(job.payload, job.last_error ?? `processing was interrupted ${job.max_attempts} times`);
      await finish(job.id);
      return;
    }
    const heartbeat = setInterval(() => {
      mine(job.id)
        .update({ locked_until: db.raw('now() + make_interval(secs => ?)', [leaseSeconds]) })
        .then((renewed) => {
          // Gone (another runner took over after a stall, or the job was removed): stop working on it.
          if (renewed === 0) abort.abort(new Error('lease lost'));
        })
        .catch((err) => log.warn({ err, job: job.id }, 'job lease renewal failed'));
    }, (leaseSeconds * 1000) / 3);
    try {
      await handler.run(job.payload, { attempt: job.attempts, signal: abort.signal });
      await finish(job.id);
    } catch (err) {
      if (abort.signal.aborted) {
        // Interrupted by stop(): handed back without spending an attempt.
        await mine(job.id).update({ locked_by: null, locked_until: null, attempts: db.raw('attempts - 1') });
        return;
      }
      const reason = (err as Error).message || String(err);
      log.warn({ err, job: job.id, kind: job.kind, attempt: job.attempts }, 'job failed');
      if (job.attempts >= job.max_attempts) {
        await handler.giveUp(job.payload, reason);
        await finish(job.id);
        return;
      }
      const delaySeconds = Math.min(MAX_RETRY_DELAY_SECONDS, 5 * 2 ** (job.attempts - 1));
      await mine(job.id).update({
        locked_by: null,
        locked_until: null,
        last_error: reason,
        run_after: db.raw('now() + make_interval(secs => ?)', [delaySeconds]),
      });
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Claims jobs until every slot is busy or none is due. */
  async function fill(): Promise<void> {
    while (!stopped && running.size < options.concurrency) {
      const job = await claim();
      if (!job) {
        backlog = false;
        return;
      }
      const abort = new AbortController();
      const done = execute(job, abort)
        .catch((err) => log.error({ err, job: job.id }, 'job bookkeeping failed; its lease will lapse and it will run again'))
        .finally(() => {
          running.delete(job.id);
          if (backlog) wake();
        });
      running.set(job.id, { abort, done });
    }
  }

  function wake(): void {
    if (stopped) return;
    if (filling) {
      fillAgain = true;
      return;
    }
    filling = fill()
      .catch((err) => log.warn({ err }, 'claiming jobs failed'))
      .finally(() => {
        filling = undefined;
        if (fillAgain) {
          fillAgain = false;
          wake();
        }
      });
  }

  /** Something may be due: look. */
  const look = () => {
    backlog = true;
    wake();
  };
  deps.queue.onWake(look);

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      timer = setInterval(look, pollMs);
      timer.unref();
      look();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await filling;
      for (const { abort } of running.values()) abort.abort(new Error('runner stopping'));
      await Promise.all([...running.values()].map((r) => r.done));
    },
  };
}
