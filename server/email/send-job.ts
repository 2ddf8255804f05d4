import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { Db } from '../db/knex.js';
import type { JobHandler } from '../jobs/runner.js';
import { claimQueuedEmail, emailBodyAad, markEmailFailed, markEmailSent, recordEmailError } from './store.js';
import { EmailSendError, type EmailTransport } from './transport.js';

/**
 * The `send_email` job: sends one outbox email and marks it sent, never sending a sent one again.
 *
 * The claim, the send and the mark happen in one transaction holding the row's lock, so two
 * runners never send the same row at once, and a sent row is skipped by any later attempt. What no
 * database can close is the gap between the mail server accepting the message and our commit: a
 * crash or lost connection there leaves the row queued and the next attempt sends it again. That
 * duplicate carries the same Message-ID (it comes from the row's id), so mail clients and servers
 * that de-duplicate by Message-ID fold it; "never sent twice" holds up to that window.
 *
 * Logs name the email by its id only: never the recipient, the license key or the body.
 */
export function sendEmailJob(deps: { db: Db; transport: EmailTransport; clock: Clock; log: Logger; masterKey: MasterKey }): JobHandler<'send_email'> {
  const { db, transport, clock, log, masterKey } = deps;

  return {
    kind: 'send_email',

    async run({ email_id }) {
      const transientError = await db.transaction(async (trx) => {
        const email = await claimQueuedEmail(trx, email_id);
        if (!email) return undefined; // sent, failed for good, or deleted with its license
        const body = (stored: string, part: 'text' | 'html') => (email.sealed ? masterKey.open(stored, emailBodyAad(email.id, part)) : stored);
        try {
          await transport.send({ id: email.id, to: email.recipient, subject: email.subject, text: body(email.text_body, 'text'), html: body(email.html_body, 'html') });
        } catch (err) {
          if (!(err instanceof EmailSendError)) throw err;
          if (!err.permanent) {
            await recordEmailError(trx, email.id, err.message);
            return err;
          }
          await markEmailFailed(trx, email.id, err.message, true);
          log.warn({ email: email.id, reason: err.message }, 'email refused by the mail server for good; not retried');
          return undefined;
        }
        await markEmailSent(trx, email.id, clock.now());
        log.info({ email: email.id, kind: email.kind, transport: transport.kind, attempt: email.attempts }, 'email sent');
        return undefined;
      });
      // Thrown after the commit, which keeps the attempt and its error on the row; the runner retries later.
      if (transientError) throw transientError;
    },

    async giveUp({ email_id }, reason) {
      await markEmailFailed(db, email_id, reason);
      log.warn({ email: email_id, reason }, 'email not sent after every attempt');
    },
  };
}
