import type { Knex } from 'knex';
import type { Db } from '../db/knex.js';

/** Every kind of email the service sends: one closed list (the table's CHECK matches). */
export const EMAIL_KINDS = ['license_delivery', 'plan_payment_failed'] as const;
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
}

export interface QueuedEmail {
  id: string;
  kind: EmailKind;
  recipient: string;
  subject: string;
  text_body: string;
  html_body: string;
  attempts: number;
}

/** Knex queries of the outbox; each runs on the connection it is given (a transaction, mostly). */

/** True when queued now; false when the same email (its dedupe key) was queued before. */
export async function insertEmailOnce(trx: Knex.Transaction, email: NewOutboxEmail): Promise<boolean> {
  const rows = await trx('email_outbox').insert(email).onConflict('dedupe_key').ignore().returning('id');
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
    .returning(['id', 'kind', 'recipient', 'subject', 'text_body', 'html_body', 'attempts']);
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
