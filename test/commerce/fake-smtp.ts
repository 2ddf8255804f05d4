import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** How the fake server answers the next message: accept it, refuse it for now (4xx) or for good (5xx), or accept it once `after` settles. */
type Answer = 'accept' | { code: number; message: string } | { after: Promise<unknown> };

export interface FakeSmtp {
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  url: string;
  /** Raw messages accepted, in order of arrival. */
  received: string[];
  /** Answers the next messages' DATA with these, in order; then accepts again. */
  answerNext(...answers: Answer[]): void;
  /** Messages whose answer waits for its `after`. */
  held(): number;
  close(): Promise<void>;
}

/** A real SMTP server on loopback (no TLS, no auth) that keeps what it accepts. */
export async function startFakeSmtp(): Promise<FakeSmtp> {
  const received: string[] = [];
  const answers: Answer[] = [];
  let held = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const answer = answers.shift() ?? 'accept';
        if (typeof answer === 'object' && 'after' in answer) {
          held++;
          void answer.after.finally(() => {
            held--;
            received.push(Buffer.concat(chunks).toString('utf8'));
            callback();
          });
          return;
        }
        if (answer !== 'accept') return callback(Object.assign(new Error(answer.message), { responseCode: answer.code }));
        received.push(Buffer.concat(chunks).toString('utf8'));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    answerNext: (...next) => void answers.push(...next),
    held: () => held,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Undoes quoted-printable (soft line breaks, `=XX`), enough to read a message's text as sent. */
export function decodeQuotedPrintable(raw: string): string {
  return raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
