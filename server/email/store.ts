import type { Knex } from 'knex';
import { hotQuery, type Db } from '../db/knex.js';
import type { JobKind, JobPayloads } from '../jobs/queue.js';

/** Every kind of email the service sends: one closed list (the table's CHECK matches). */
export const EMAIL_KINDS = ['license_delivery', 'plan_payment_failed', 'two_factor_locked', 'password_reset', 'password_changed'] as const;
export type EmailKind = (typeof EMAIL_KINDS)[number];

export interface NewOutboxEmail {
  id: string;
  developer_id: string;
  /** Null for an email to the developer about their own account. */
  app_id: string | null;
  license_id: string | null;
  kind: EmailKind;
  recipient: string;
  subject: string;
  text_body: string;
  html_body: string;
  dedupe_key: string;
  /** The bodies are sealed under the master key (`emailBodyAad`): they carry a credential (a password reset link). */
  sealed?: boolean;
}

/** Binds a sealed body to its outbox row and part. */
export const emailBodyAad = (emailId: string, part: 'text' | 'html') => `email_outbox:${emailId}:${part}`;

export interface QueuedEmail {
  id: string;
  kind: EmailKind;
  recipient: string;
  subject: string;
  text_body: string;
  html_body: string;
  sealed: boolean;
  attempts: number;
}

/** Knex queries of the outbox; each runs on the connection it is given (a transaction, mostly). */

/** The outbox row and the job that sends it, in one statement (once per dedupe key, job included). */
const INSERT_EMAIL_ONCE_SQL = `
  WITH email AS (
    INSERT INTO email_outbox (id, developer_id, app_id, license_id, kind, recipient, subject, text_body, html_body, dedupe_key, sealed)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $14)
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id
  ), job AS (
    INSERT INTO jobs (developer_id, kind, payload, max_attempts) SELECT $2, $11::text, $12::jsonb, $13::integer FROM email
  )
  SELECT id FROM email`;

/** Queues the email with the job `send` that sends it; true when queued now, false when the same email (its dedupe key) was queued before. */
export async function insertEmailOnce(
  trx: Knex.Transaction,
  email: NewOutboxEmail,
  send: { kind: JobKind; payload: JobPayloads[JobKind]; maxAttempts: number },
): Promise<boolean> {
  const rows = await hotQuery(
    trx,
    INSERT_EMAIL_ONCE_SQL,
    [
      email.id, email.developer_id, email.app_id, email.license_id, email.kind, email.recipient, email.subject, email.text_body, email.html_body,
      email.dedupe_key, send.kind, JSON.stringify(send.payload), send.maxAttempts, email.sealed ?? false,
    ],
    'email.insert_once',
  );
  return rows.length > 0;
}

/**
 * Counts an attempt on a still-queued email, which locks its row until the transaction ends.
 * Another sender of the same row waits for that lock, then finds it no longer queued: this keeps
 * two runners from sending it at once (one that stalled past its job lease, and its successor).
 */
export async function claimQueuedEmail(trx: Knex.Transaction, id: string): Promise<QueuedEmail | undefined> {
  const [row] = await trx('email_outbox')
    .where({ id, status: 'queued' })
    .increment('attempts', 1)
    .returning(['id', 'kind', 'recipient', 'subject', 'text_body', 'html_body', 'sealed', 'attempts']);
  return row as QueuedEmail | undefined;
}

export async function markEmailSent(trx: Knex.Transaction, id: string, at: Date): Promise<void> {
  await trx('email_outbox').where({ id }).update({ status: 'sent', sent_at: at, last_error: null });
}

export async function recordEmailError(trx: Knex.Transaction, id: string, reason: string): Promise<void> {
  await trx('email_outbox').where({ id }).update({ last_error: reason });
}

/** Only a queued email fails: one sent meanwhile stays sent. */
export async function markEmailFailed(db: Db, id: string, reason: string): Promise<void> {
  await db('email_outbox').where({ id, status: 'queued' }).update({ status: 'failed', last_error: reason });
}
