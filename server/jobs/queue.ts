import type { Knex } from 'knex';

/** Every kind of background job: one closed list, each with its payload. */
export interface JobPayloads {
  /** Scan and protect an uploaded build (server/builds/protect-job.ts). */
  protect_build: { build_id: string; app_id: string };
  /** Send one outbox email (server/email/send-job.ts). */
  send_email: { email_id: string };
  /** Report a license's platform fee to the payment processor (server/billing/report-fee-job.ts). */
  report_license_fee: { license_id: string };
}
export type JobKind = keyof JobPayloads;

export interface JobQueue {
  /**
   * Adds a job in the caller's transaction: it exists exactly when the state change that needs it
   * commits. Call `wake` after the commit to start it at once in this process. `developerId` is the
   * tenant it works for: the runner takes turns between tenants (runner.ts).
   */
  enqueue<K extends JobKind>(trx: Knex.Transaction, developerId: string, kind: K, payload: JobPayloads[K], options?: { maxAttempts?: number }): Promise<void>;
  /** Tells this process's runner a job is waiting (other processes find it by polling). */
  wake(): void;
  /** @internal the runner listens here. */
  onWake(listener: () => void): void;
}

const DEFAULT_MAX_ATTEMPTS = 3;

/** One job to insert: its tenant, kind and payload, and how often it is tried. */
export interface NewJob<K extends JobKind = JobKind> {
  developerId: string;
  kind: K;
  payload: JobPayloads[K];
  maxAttempts?: number;
}

/** Inserts the job on `q` (the caller's transaction): the one insert of a job, whoever causes it. */
export async function insertJob<K extends JobKind>(q: Knex, job: NewJob<K>): Promise<void> {
  await q('jobs').insert({ developer_id: job.developerId, kind: job.kind, payload: JSON.stringify(job.payload), max_attempts: job.maxAttempts ?? DEFAULT_MAX_ATTEMPTS });
}

/**
 * The SQL expressions (parameters, or columns of the statement's own rows) a job's columns take,
 * for a statement that queues a job with the row that causes it (`insertJobsSql`).
 */
export interface JobColumnsSql {
  developerId: string;
  kind: string;
  payload: string;
  maxAttempts: string;
  /** When it becomes due (default: at once). */
  runAfter?: string;
}

/**
 * The same insert inside one statement (a data-modifying CTE): one job per row of `from`, so a job
 * exists exactly when the row that causes it was written, in one round trip. The fee ledger and
 * the outbox (billing/store.ts, email/store.ts) and the statements that sell a license in one go
 * (redemption, the entitlement webhook) queue their jobs with it.
 */
export const insertJobsSql = (from: string, job: JobColumnsSql) =>
  `INSERT INTO jobs (developer_id, kind, payload, max_attempts, run_after) SELECT ${job.developerId}, ${job.kind}, ${job.payload}, ${job.maxAttempts}, ${job.runAfter ?? 'now()'} FROM ${from}`;

export function createJobQueue(): JobQueue {
  const listeners: (() => void)[] = [];
  return {
    enqueue: (trx, developerId, kind, payload, options = {}) => insertJob(trx, { developerId, kind, payload, maxAttempts: options.maxAttempts }),
    wake: () => listeners.forEach((listener) => listener()),
    onWake: (listener) => void listeners.push(listener),
  };
}
