import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';

export interface OutgoingEmail {
  /** The outbox row's id: it makes the Message-ID, the same on every attempt. */
  id: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface EmailTransport {
  /** Where mail goes: a mail server, or `.eml` files for a developer to open. */
  readonly kind: 'smtp' | 'files';
  /** Throws EmailSendError. */
  send(email: OutgoingEmail): Promise<void>;
}

/**
 * A send that did not happen. `permanent`: the mail server refused for good (5xx), so trying again
 * cannot help. The message never carries the recipient (servers echo it) nor any of the content.
 */
export class EmailSendError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

export interface EmailTransportConfig {
  smtpUrl: string | undefined;
  emailFrom: string;
  dataDir: string;
}

// Far below nodemailer's defaults (2 and 10 minutes): a send holds the outbox row's lock throughout.
const SMTP_TIMEOUTS = { connectionTimeout: 30_000, greetingTimeout: 30_000, socketTimeout: 60_000 };

/** `Latchkey <no-reply@example.com>` -> `example.com`: Message-IDs are ours under the sender's domain. */
function senderDomain(from: string): string {
  return /@([^\s<>@]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';
}

function toSendError(err: unknown, recipient: string): EmailSendError {
  const e = err as { message?: string; permanent?: boolean };
  const message = (e.message || String(err)).split(recipient).join('<recipient>');
  return new EmailSendError(message, e.permanent === true);
}

/**
 * SMTP when `SMTP_URL` is set (smtp:// or smtps://); otherwise each email is written to
 * `<data dir>/outbox/<id>.eml`, so a fresh `npm start` sends "mail" a developer can open.
 */
export function createEmailTransport(config: EmailTransportConfig): EmailTransport {
  const domain = senderDomain(config.emailFrom);
  const message = (email: OutgoingEmail) => ({
    from: config.emailFrom,
    to: email.to,
    subject: email.subject,
    text: email.text,
    html: email.html,
    messageId: `<${email.id}@${domain}>`,
  });

  if (config.smtpUrl) {
    // The content is ours and plain: nodemailer must never read local files or URLs into a message.
    const smtp = nodemailer.createTransport({ url: config.smtpUrl, ...SMTP_TIMEOUTS, disableFileAccess: true, disableUrlAccess: true });
    return {
      kind: 'smtp',
      async send(email) {
        try {
          await smtp.sendMail(message(email));
        } catch (err) {
          throw toSendError(err, email.to);
        }
      },
    };
  }

  const dir = path.join(config.dataDir, 'outbox');
  const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix', disableFileAccess: true, disableUrlAccess: true });
  return {
    kind: 'files',
    async send(email) {
      try {
        const { message: raw } = await composer.sendMail(message(email));
        await fs.mkdir(dir, { recursive: true, mode: 0o700 });
        // Written whole or not at all; a resend of the same row replaces its file. Mode 600: it holds a license key.
        const file = path.join(dir, `${email.id}.eml`);
        const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
        await fs.writeFile(temp, raw, { mode: 0o600 });
        await fs.rename(temp, file);
      } catch (err) {
        throw toSendError(err, email.to);
      }
    },
  };
}
