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
  enqueue<K extends JobKind>(
    trx: Knex.Transaction,
    developerId: string,
    kind: K,
    payload: JobPayloads[K],
    options?: { maxAttempts?: number },
  ): Promise<void>;
  /** Tells this process's runner a job is waiting (other processes find it by polling). */
  wake(): void;
  /** @internal the runner listens here. */
  onWake(listener: () => void): void;
}

const DEFAULT_MAX_ATTEMPTS = 3;

export function createJobQueue(): JobQueue {
  const listeners: (() => void)[] = [];
  return {
    async enqueue(trx, developerId, kind, payload, options = {}) {
      await trx('jobs').insert({ developer_id: developerId, kind, payload: JSON.stringify(payload), max_attempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS });
    },
    wake: () => listeners.forEach((listener) => listener()),
    onWake: (listener) => void listeners.push(listener),
  };
}
