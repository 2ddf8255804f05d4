import type { Knex } from 'knex';
import { newId } from '../crypto/secrets.js';
import type { JobQueue } from '../jobs/queue.js';
import { renderDeliveryEmail, type DeliveryDetails } from './delivery-message.js';
import { insertEmailOnce } from './store.js';

export interface DeliveryEmailRequest extends DeliveryDetails {
  developerId: string;
  appId: string;
  licenseId: string;
  recipient: string;
}

/**
 * Transient failures (a mail server down, a full disk) are retried with the job runner's backoff
 * (5 s doubling to 5 min): about ten minutes in all before the email is marked failed.
 */
const SEND_ATTEMPTS = 8;

/** Emails are written to the outbox in the caller's transaction and sent by the `send_email` job. */
export function createEmailOutbox(deps: { queue: JobQueue }) {
  const { queue } = deps;

  return {
    /**
     * Queues the license delivery email in `trx`, so it exists exactly when the license commits.
     * Queued once per license and address, whatever the retries: answers false when it already was.
     * Call `queue.wake()` after the commit to send it at once.
     */
    async queueDeliveryEmail(trx: Knex.Transaction, request: DeliveryEmailRequest): Promise<boolean> {
      const recipient = request.recipient.trim();
      const message = renderDeliveryEmail(request);
      const id = newId('eml');
      const queued = await insertEmailOnce(trx, {
        id,
        developer_id: request.developerId,
        app_id: request.appId,
        license_id: request.licenseId,
        kind: 'license_delivery',
        recipient,
        subject: message.subject,
        text_body: message.text,
        html_body: message.html,
        dedupe_key: `license_delivery:${request.licenseId}:${recipient.toLowerCase()}`,
      });
      if (queued) await queue.enqueue(trx, 'send_email', { email_id: id }, { maxAttempts: SEND_ATTEMPTS });
      return queued;
    },
  };
}

export type EmailOutbox = ReturnType<typeof createEmailOutbox>;
