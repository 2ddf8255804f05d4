import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { escapeLiteral } from 'pg';
import { hotQuery, simpleQueryBatch, type Db } from '../db/knex.js';
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
  /** Jobs one tenant may have running at once, counted over every process's runners (default 1). */
  perTenant?: number;
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
const DEFAULT_PER_TENANT = 1;
/** The advisory lock that makes claims of every process take turns (hashtext('latchkey.jobs.claim')). */
const CLAIM_LOCK = 'latchkey.jobs.claim';

/**
 * The claim: one due job of the tenant whose turn it is. Tenants at their cap of running jobs
 * (leases held now, in any process) wait; of the others, the one with the fewest running jobs goes
 * first, then the one served longest ago (job_tenant_turns), so a tenant with a thousand queued
 * jobs and one with a single job alternate instead of queueing behind each other. Within a tenant,
 * oldest first. Jobs without a tenant (null) share one turn. Answers one row: the job (id null when
 * none) and how many tenants had due jobs, capped ones included. `runner` (its id), `leaseSeconds`,
 * `kinds` (text[]) and `perTenant` are SQL literals: the claim runs as a simple query (below).
 */
const claimSql = ({ runner, leaseSeconds, kinds, perTenant }: Record<'runner' | 'leaseSeconds' | 'kinds' | 'perTenant', string>) => `
  WITH due AS (
    SELECT DISTINCT coalesce(developer_id, '') AS tenant FROM jobs
    WHERE kind = ANY (${kinds}) AND run_after <= now() AND (locked_until IS NULL OR locked_until < now())
  ), busy AS (
    SELECT coalesce(developer_id, '') AS tenant, count(*) AS running FROM jobs WHERE locked_until >= now() GROUP BY 1
  ), turn AS (
    SELECT due.tenant, coalesce(busy.running, 0) AS running, t.served_at
    FROM due LEFT JOIN busy ON busy.tenant = due.tenant LEFT JOIN job_tenant_turns t ON t.developer_id = due.tenant
    WHERE coalesce(busy.running, 0) < ${perTenant}
  ), next AS (
    SELECT j.id, turn.tenant FROM turn
    JOIN jobs j ON coalesce(j.developer_id, '') = turn.tenant
    WHERE j.kind = ANY (${kinds}) AND j.run_after <= now() AND (j.locked_until IS NULL OR j.locked_until < now())
    ORDER BY turn.running, turn.served_at NULLS FIRST, j.run_after, j.id
    LIMIT 1
    FOR UPDATE OF j SKIP LOCKED
  ), claimed AS (
    UPDATE jobs SET attempts = attempts + 1, locked_by = ${runner}, locked_until = now() + make_interval(secs => ${leaseSeconds})
    FROM next WHERE jobs.id = next.id
    RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts, jobs.last_error, next.tenant
  ), served AS (
    INSERT INTO job_tenant_turns (developer_id, served_at) SELECT tenant, clock_timestamp() FROM claimed
    ON CONFLICT (developer_id) DO UPDATE SET served_at = excluded.served_at
  )
  SELECT claimed.id, kind, payload, attempts, max_attempts, last_error, (SELECT count(*) FROM due)::int AS due_tenants
  FROM (SELECT 1) one LEFT JOIN claimed ON true`;

/**
 * A claim in one round trip (four as a knex transaction: BEGIN, lock, claim, COMMIT), and one runs
 * after every job enqueued, so every sale pays for it. Claims of every process take turns under one
 * transaction-scoped advisory lock: taken by its own statement, before the claim's statement takes
 * its snapshot, so the claim sees the leases the previous claims committed and no two claims
 * together take a tenant past its cap. The simple protocol that sends several statements at once
 * takes no parameters: the claim's values are literals, all the runner's own (none from a request).
 */
const claimBatchSql = (values: Parameters<typeof claimSql>[0]) => `BEGIN; SELECT pg_advisory_xact_lock(hashtext(${escapeLiteral(CLAIM_LOCK)})); ${claimSql(values)}; COMMIT`;

const MAX_RETRY_DELAY_SECONDS = 300;

/**
 * Runs jobs from the `jobs` table, taking turns between tenants (CLAIM_SQL). A job is claimed with `FOR UPDATE SKIP LOCKED` and leased: its
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
  const perTenant = options.perTenant ?? DEFAULT_PER_TENANT;
  const runnerId = `runner_${randomUUID()}`;
  const claimBatch = claimBatchSql({
    runner: escapeLiteral(runnerId),
    leaseSeconds: String(Math.trunc(leaseSeconds)),
    kinds: `ARRAY[${kinds.map(escapeLiteral).join(', ')}]::text[]`,
    perTenant: String(Math.trunc(perTenant)),
  });
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

  /** A job, or none: `waiting` when due jobs were left (their tenants at their cap, their rows locked). */
  async function claim(): Promise<{ job?: ClaimedJob; waiting: boolean }> {
    // Lease times are the database's clock. Not a prepared statement (the simple protocol has none):
    // a generic plan, blind to the backlog, could be a worse one anyway.
    const results = await simpleQueryBatch<Omit<ClaimedJob, 'id'> & { id: number | null; due_tenants: number }>(db, claimBatch);
    const { due_tenants, ...row } = results[2]!.rows[0]!;
    return row.id === null ? { waiting: due_tenants > 0 } : { job: row as ClaimedJob, waiting: false };
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
    const heartbeat = setInterval(
      () => {
        mine(job.id)
          .update({ locked_until: db.raw('now() + make_interval(secs => ?)', [leaseSeconds]) })
          .then((renewed) => {
            // Gone (another runner took over after a stall, or the job was removed): stop working on it.
            if (renewed === 0) abort.abort(new Error('lease lost'));
          })
          .catch((err) => log.warn({ err, job: job.id }, 'job lease renewal failed'));
      },
      (leaseSeconds * 1000) / 3,
    );
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
      const { job, waiting } = await claim();
      if (!job) {
        // Jobs held back by their tenant's cap: look again when one of ours ends (or at the poll).
        backlog = waiting;
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
