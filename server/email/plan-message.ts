import { paragraphsEmail, type RenderedEmail } from './html.js';

export interface PaymentFailedDetails {
  companyName: string;
  /** Until when Pro stays on while the processor retries the charge. */
  graceUntil: Date;
}

/** Tells a developer their Pro renewal failed, and what stops if it keeps failing. */
export function renderPaymentFailedEmail(d: PaymentFailedDetails): RenderedEmail {
  const until = `${d.graceUntil.toISOString().slice(0, 10)} (UTC)`;
  const lines = [
    `The payment for ${d.companyName}'s Latchkey Pro subscription failed.`,
    `Pro stays on until ${until} while the charge is retried. Update your payment method before then:`,
    'without Pro, paid sales, the entitlement webhook and update pushes stop. Licenses already issued keep working.',
  ];
  return paragraphsEmail('Latchkey Pro: your payment failed', lines);
}
