import type { Knex } from 'knex';
import { hotQuery, type Db } from '../db/knex.js';
import { insertJobsSql, type JobKind } from '../jobs/queue.js';

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

/**
 * The job that sends one outbox email. Transient failures (a mail server down, a full disk) are
 * retried with the job runner's backoff (5 s doubling to 5 min): about ten minutes in all before
 * the email is marked failed.
 */
export const SEND_EMAIL_JOB = { kind: 'send_email', maxAttempts: 8 } as const satisfies { kind: JobKind; maxAttempts: number };

const EMAIL_COLUMNS = ['id', 'developer_id', 'app_id', 'license_id', 'kind', 'recipient', 'subject', 'text_body', 'html_body', 'dedupe_key'];

/**
 * The one text that queues an email, as two CTEs of a statement: `email` inserts the outbox row
 * (once per dedupe key) and `email_job` the job that sends it (its payload, JobPayloads['send_email'], names the row). `record` is the
 * SQL of a jsonb NewOutboxEmail, or of null for none; `from` names the statement's rows it is
 * queued for (none: no email), when the statement sells the license itself.
 */
export const queueEmailCtes = (email: { record: string; from?: string }) => `
  email AS (
    INSERT INTO email_outbox (${EMAIL_COLUMNS.join(', ')}, sealed)
    SELECT ${EMAIL_COLUMNS.map((c) => `e.${c}`).join(', ')}, COALESCE(e.sealed, false)
    FROM ${email.from ? `${email.from}, ` : ''}jsonb_populate_record(NULL::email_outbox, ${email.record}) e
    WHERE ${email.record} IS NOT NULL
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id, developer_id
  ), email_job AS (
    ${insertJobsSql('email', {
      developerId: 'developer_id',
      kind: `'${SEND_EMAIL_JOB.kind}'`,
      payload: `jsonb_build_object('email_id', id)`,
      maxAttempts: String(SEND_EMAIL_JOB.maxAttempts),
    })}
  )`;

/** The email as `queueEmailCtes`'s `record` parameter takes it. */
export const emailRecord = (email: NewOutboxEmail | null) => (email === null ? null : JSON.stringify(email));

const INSERT_EMAIL_ONCE_SQL = `WITH ${queueEmailCtes({ record: '$1::jsonb' })} SELECT id FROM email`;

/** Queues the email with the job that sends it (queueEmailCtes); true when queued now, false when the same email (its dedupe key) was queued before. */
export async function insertEmailOnce(trx: Knex.Transaction, email: NewOutboxEmail): Promise<boolean> {
  const rows = await hotQuery(trx, INSERT_EMAIL_ONCE_SQL, [emailRecord(email)], 'email.insert_once');
  return rows.length > 0;
}

/**
 * Locks a still-queued email's row until the transaction ends, and reads it with the attempt this
 * is counted in. Another sender of the same row waits for that lock, then finds it no longer queued:
 * this keeps two runners from sending it at once (one that stalled past its job lease, and its
 * successor).
 *
 * The row is locked by a SELECT and then updated once, by whichever of the three below ends the
 * attempt (each counts it). A second UPDATE of a row this transaction already updated makes
 * PostgreSQL check its license foreign key again, taking a key-share lock on the license while this
 * row stays locked through the send: a redact holding that license and deleting the license's
 * emails then deadlocked with the job (one 500 in a few CI runs).
 */
export async function claimQueuedEmail(trx: Knex.Transaction, id: string): Promise<QueuedEmail | undefined> {
  const [row] = await hotQuery<QueuedEmail>(
    trx,
    `SELECT id, kind, recipient, subject, text_body, html_body, sealed, attempts + 1 AS attempts
     FROM email_outbox WHERE id = $1 AND status = 'queued' FOR NO KEY UPDATE`,
    [id],
    'email.lock_queued',
  );
  return row;
}

// Every email sent runs the claim above and this: both prepared (hotQuery).
export async function markEmailSent(trx: Knex.Transaction, id: string, at: Date): Promise<void> {
  await hotQuery(trx, `UPDATE email_outbox SET status = 'sent', sent_at = $2, last_error = NULL, attempts = attempts + 1 WHERE id = $1`, [id, at], 'email.mark_sent');
}

/** A claimed attempt that failed for now: counted, with its reason. */
export async function recordEmailError(trx: Knex.Transaction, id: string, reason: string): Promise<void> {
  await trx('email_outbox')
    .where({ id })
    .update({ last_error: reason, attempts: trx.raw('attempts + 1') });
}

/**
 * Only a queued email fails: one sent meanwhile stays sent. `attempted`: the end of a claimed
 * attempt the mail server refused for good (counted), rather than the job giving up.
 */
export async function markEmailFailed(db: Db, id: string, reason: string, attempted = false): Promise<void> {
  await db('email_outbox')
    .where({ id, status: 'queued' })
    .update({ status: 'failed', last_error: reason, ...(attempted ? { attempts: db.raw('attempts + 1') } : {}) });
}

/** Whether the email of this dedupe key was ever queued (sent or not). */
export const emailQueuedFor = async (q: Knex, dedupeKey: string): Promise<boolean> => Boolean(await q('email_outbox').where({ dedupe_key: dedupeKey }).first('id'));

/** Deletes a license's emails (addresses, keys) when its buyer's data is redacted; answers how many. */
export const deleteLicenseEmails = (trx: Knex.Transaction, licenseId: string): Promise<number> => trx('email_outbox').where({ license_id: licenseId }).delete();
