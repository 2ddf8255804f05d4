import type { Knex } from 'knex';
import type { MasterKey } from '../crypto/master-key.js';
import { newId } from '../crypto/secrets.js';
import { renderDeliveryEmail, type DeliveryDetails } from './delivery-message.js';
import type { RenderedEmail } from './html.js';
import { renderPaymentFailedEmail, type PaymentFailedDetails } from './plan-message.js';
import { emailBodyAad, insertEmailOnce, type EmailKind, type NewOutboxEmail } from './store.js';

export interface DeliveryEmailRequest extends DeliveryDetails {
  developerId: string;
  appId: string;
  licenseId: string;
  recipient: string;
}

/** What makes two delivery emails the same: a license and an address (queued once whatever the retries). */
export const deliveryDedupeKey = (licenseId: string, recipient: string) => `license_delivery:${licenseId}:${recipient.trim().toLowerCase()}`;

/** The outbox row of a license delivery email (queued by `queueDeliveryEmail`, or by a statement that sells the license). */
export function deliveryEmail(request: DeliveryEmailRequest): NewOutboxEmail {
  const recipient = request.recipient.trim();
  const message = renderDeliveryEmail(request);
  return {
    id: newId('eml'),
    developer_id: request.developerId,
    app_id: request.appId,
    license_id: request.licenseId,
    kind: 'license_delivery',
    recipient,
    subject: message.subject,
    text_body: message.text,
    html_body: message.html,
    dedupe_key: deliveryDedupeKey(request.licenseId, recipient),
  };
}

/** Emails are written to the outbox in the caller's transaction and sent by the `send_email` job. */
export function createEmailOutbox() {
  const queueOnce = insertEmailOnce;

  return {
    /**
     * Queues the license delivery email in `trx`, so it exists exactly when the license commits.
     * Queued once per license and address, whatever the retries: answers false when it already was.
     * Call `queue.wake()` after the commit to send it at once.
     */
    queueDeliveryEmail(trx: Knex.Transaction, request: DeliveryEmailRequest): Promise<boolean> {
      return queueOnce(trx, deliveryEmail(request));
    },

    /** Tells the developer their Pro renewal failed; once per processor event (`eventId`), whatever the retries. */
    queuePaymentFailedEmail(trx: Knex.Transaction, request: PaymentFailedDetails & { developerId: string; recipient: string; eventId: string }): Promise<boolean> {
      const message = renderPaymentFailedEmail(request);
      return queueOnce(trx, {
        id: newId('eml'),
        developer_id: request.developerId,
        app_id: null,
        license_id: null,
        kind: 'plan_payment_failed',
        recipient: request.recipient.trim(),
        subject: message.subject,
        text_body: message.text,
        html_body: message.html,
        dedupe_key: `plan_payment_failed:${request.eventId}`,
      });
    },

    /**
     * An email to the developer about their own account's security; once per `dedupeKey`, whatever
     * the retries. `sealWith`: the bodies carry a credential, so they are stored sealed under the
     * master key and opened only to send.
     */
    queueAccountEmail(
      trx: Knex.Transaction,
      request: { developerId: string; recipient: string; kind: EmailKind; message: RenderedEmail; dedupeKey: string; sealWith?: MasterKey },
    ): Promise<boolean> {
      const id = newId('eml');
      const stored = (body: string, part: 'text' | 'html') => (request.sealWith ? request.sealWith.seal(body, emailBodyAad(id, part)) : body);
      return queueOnce(trx, {
        id,
        developer_id: request.developerId,
        app_id: null,
        license_id: null,
        kind: request.kind,
        recipient: request.recipient.trim(),
        subject: request.message.subject,
        text_body: stored(request.message.text, 'text'),
        html_body: stored(request.message.html, 'html'),
        dedupe_key: `${request.kind}:${request.dedupeKey}`,
        sealed: Boolean(request.sealWith),
      });
    },
  };
}

export type EmailOutbox = ReturnType<typeof createEmailOutbox>;
