import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../server/clock.js';
import { MasterKey } from '../../server/crypto/master-key.js';
import { createEmailOutbox, type DeliveryEmailRequest } from '../../server/email/outbox.js';
import { sendEmailJob } from '../../server/email/send-job.js';
import { createEmailTransport } from '../../server/email/transport.js';
import { createJobQueue } from '../../server/jobs/queue.js';
import { createJobRunner, type JobRunner } from '../../server/jobs/runner.js';
import { createLicense } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tenant, type Tenant } from '../licensing/world.js';
import { decodeQuotedPrintable, startFakeSmtp, type FakeSmtp } from './fake-smtp.js';
import { eventually } from '../support/wait.js';

const DOWNLOAD_URL_PATH = '/v1/downloads/bld_0123456789abcdef01234567?expires=1900000000&signature=sig-value_with-enough-length-to-wrap';

interface OutboxRow {
  id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  sent_at: Date | null;
}

/** A paid license created through the API, and a way to queue its delivery email like fulfilment will. */
async function sale(server: TestServer, t: Tenant) {
  const license = await createLicense(t.call, t.dev, { app_id: t.app.id });
  const outbox = createEmailOutbox();
  const request = (recipient: string): DeliveryEmailRequest => ({
    developerId: t.dev.id,
    appId: t.app.id,
    licenseId: license.license_id,
    recipient,
    appName: 'Notes Pro',
    licenseKey: license.license_key,
    downloadUrl: `${server.url}${DOWNLOAD_URL_PATH}`,
    downloadExpiresAt: '2030-03-15T10:00:00.000Z',
    appVersion: '1.2.0',
  });
  return {
    license,
    queue: (recipient: string) => server.database.db.transaction((trx) => outbox.queueDeliveryEmail(trx, request(recipient))),
    rows: (): Promise<OutboxRow[]> => server.database.db('email_outbox').where({ license_id: license.license_id }).select(),
  };
}

const sentRow = (rows: () => Promise<OutboxRow[]>) => eventually('the email to be sent', async () => (await rows()).find((r) => r.status === 'sent'));

describe('delivery email through the server (SMTP)', () => {
  let smtp: FakeSmtp;
  let server: TestServer;
  let t: Tenant;
  // The server's runner finds the jobs queued here by polling the jobs table.

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    server = await startTestServer({ env: { SMTP_URL: smtp.url, LATCHKEY_EMAIL_FROM: 'Notes Store <sales@notes.test>' } });
    t = await tenant(server);
  });
  afterAll(async () => {
    await server.close();
    await smtp.close();
  });

  const receivedWith = (key: string) => smtp.received.map(decodeQuotedPrintable).filter((m) => m.includes(key));

  it('sends the key, the download link and getting-started text to the customer, then marks the email sent', async () => {
    const s = await sale(server, t);
    expect(await s.queue('buyer@example.com')).toBe(true);
    const row = await sentRow(s.rows);
    expect(row).toMatchObject({ attempts: 1, last_error: null, sent_at: expect.any(Date) });

    const [message] = await eventually('the message at the SMTP server', async () => receivedWith(s.license.license_key).length > 0 && receivedWith(s.license.license_key));
    expect(message).toMatch(/^To: buyer@example\.com$/m);
    expect(message).toMatch(/^From: Notes Store <sales@notes\.test>$/m);
    expect(message).toMatch(/^Subject: Your Notes Pro license key$/m);
    expect(message).toMatch(new RegExp(`^Message-ID: <${row.id}@notes\\.test>$`, 'm'));
    expect(message).toContain(`${server.url}${DOWNLOAD_URL_PATH}`);
    expect(message).toContain('Download Notes Pro 1.2.0');
    expect(message).toContain('Getting started');
    expect(message).toContain('works until 2030-03-15 10:00 UTC');
    // The HTML part carries the link escaped.
    expect(message).toContain(`href="${server.url}${DOWNLOAD_URL_PATH.replace('&', '&amp;')}"`);
  });

  it('queues the same delivery once whatever the retries, and sends it once', async () => {
    const s = await sale(server, t);
    const outcomes = await Promise.all([s.queue('twice@example.com'), s.queue('twice@example.com'), s.queue('Twice@Example.com ')]);
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    await sentRow(s.rows);
    expect(await s.rows()).toHaveLength(1);
    expect(await s.queue('twice@example.com')).toBe(false);
    // Nothing left to run: the one send_email job finishes with the one email (its row goes in the
    // runner's next statement, just after the email is marked sent).
    const sendJobs = async () => Number((await server.database.db('jobs').where({ kind: 'send_email' }).count<{ count: number }[]>({ count: '*' }))[0]!.count);
    await eventually('the send_email job to finish', async () => (await sendJobs()) === 0);
    expect(receivedWith(s.license.license_key)).toHaveLength(1);

    // Another address for the same license is another email.
    expect(await s.queue('gift@example.com')).toBe(true);
    await eventually('the second address to be sent', async () => (await s.rows()).every((r) => r.status === 'sent') && (await s.rows()).length === 2);
    expect(receivedWith(s.license.license_key)).toHaveLength(2);
  });

  it('retries a transient refusal and sends the email once', async () => {
    const s = await sale(server, t);
    smtp.answerNext({ code: 451, message: 'try again later' });
    await s.queue('later@example.com');
    const failedOnce = await eventually('the first attempt to fail', async () => (await s.rows()).find((r) => r.attempts === 1 && r.last_error));
    expect(failedOnce).toMatchObject({ status: 'queued', last_error: expect.stringContaining('451') });
    expect(receivedWith(s.license.license_key)).toHaveLength(0);

    // The runner's backoff would wait 5 s: bring the retry forward.
    await server.database.db('jobs').where({ kind: 'send_email' }).update({ run_after: server.database.db.fn.now() });
    const sent = await sentRow(s.rows);
    expect(sent).toMatchObject({ attempts: 2, last_error: null });
    expect(receivedWith(s.license.license_key)).toHaveLength(1);
  });

  it('does not deadlock with a transaction that holds the license and removes its emails (a redact) while the email is being sent', async () => {
    const s = await sale(server, t);
    let answer!: () => void;
    smtp.answerNext({ after: new Promise<void>((resolve) => (answer = resolve)) });
    await s.queue('held@example.com');
    // The job holds the email's row until the mail server answers.
    await eventually('the message to reach the mail server', async () => smtp.held() === 1 || undefined);
    const db = server.database.db;
    const removed = db.transaction(async (trx) => {
      await trx('licenses').where({ id: s.license.license_id }).forUpdate().first('id');
      const deleting = trx('email_outbox').where({ license_id: s.license.license_id }).delete();
      const waiting = deleting.then((n) => n);
      // The job ends its attempt while the removal waits for the email's row. Updating that row a
      // second time in its transaction made PostgreSQL take a key-share lock on the license, held
      // here: a deadlock, and the removal (waiting longest) was the one PostgreSQL cancelled.
      setTimeout(answer, 300);
      return waiting;
    });
    await expect(removed).resolves.toBe(1);
    expect(receivedWith(s.license.license_key)).toHaveLength(1);
  });
});

describe('delivery email without SMTP', () => {
  let server: TestServer;
  let t: Tenant;

  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
  });
  afterAll(() => server.close());

  it('writes an .eml file into the data directory that a mail client opens', async () => {
    const s = await sale(server, t);
    await s.queue('laptop@example.com');
    const row = await sentRow(s.rows);
    const dir = path.join(server.dataDir, 'outbox');
    expect(fs.readdirSync(dir)).toEqual([`${row.id}.eml`]);
    const file = path.join(dir, `${row.id}.eml`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const message = decodeQuotedPrintable(fs.readFileSync(file, 'utf8'));
    expect(message).toMatch(/^From: Latchkey <no-reply@localhost>$/m);
    expect(message).toMatch(new RegExp(`^Message-ID: <${row.id}@localhost>$`, 'm'));
    expect(message).toContain(s.license.license_key);
    expect(message).toContain(`${server.url}${DOWNLOAD_URL_PATH}`);
  });
});

describe('mail server refusals, as the logs see them', () => {
  let smtp: FakeSmtp;
  let server: TestServer;
  let t: Tenant;
  let runner: JobRunner;
  const logLines: string[] = [];
  const queue = createJobQueue();

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    // The server runs no jobs: this file's runner does, with a logger the test reads.
    server = await startTestServer({ env: { LATCHKEY_RUN_JOBS: 'false' } });
    t = await tenant(server);
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          logLines.push(String(chunk));
          done();
        },
      }),
    );
    const transport = createEmailTransport({ smtpUrl: smtp.url, emailFrom: 'Latchkey <no-reply@localhost>', dataDir: server.dataDir });
    const db = server.database.db;
    runner = createJobRunner(
      { db, queue, log, handlers: [sendEmailJob({ db, transport, clock: systemClock, log, masterKey: new MasterKey(randomBytes(32)) })] },
      { concurrency: 1, pollMs: 100 },
    );
    runner.start();
  });
  afterAll(async () => {
    await runner.stop();
    await server.close();
    await smtp.close();
  });

  it('fails an email the server refuses for good at once, with the reason and without the address', async () => {
    const s = await sale(server, t);
    smtp.answerNext({ code: 550, message: 'mailbox unavailable for refused@example.com' });
    await s.queue('refused@example.com');
    queue.wake();
    const row = await eventually('the email to fail', async () => (await s.rows()).find((r) => r.status === 'failed'));
    expect(row.attempts).toBe(1);
    expect(row.last_error).toContain('550 mailbox unavailable for <recipient>');
    // The runner deletes the job's row in its next statement, after the email is marked failed.
    await eventually('the send job to be gone', async () => (await server.database.db('jobs').where({ kind: 'send_email' })).length === 0);

    const logs = logLines.join('');
    expect(logs).toContain(row.id);
    expect(logs).toContain('refused by the mail server');
    expect(logs).not.toContain(s.license.license_key);
    expect(logs).not.toContain('refused@example.com');
    expect(logs).not.toContain('Getting started');
  });

  it('logs a transient failure and the retry without the key, the address or the body', async () => {
    const s = await sale(server, t);
    smtp.answerNext({ code: 421, message: 'closing for maintenance' });
    await s.queue('retried@example.com');
    queue.wake();
    await eventually('the first attempt to fail', async () => (await s.rows()).find((r) => r.attempts === 1 && r.last_error));
    await server.database.db('jobs').where({ kind: 'send_email' }).update({ run_after: server.database.db.fn.now() });
    await sentRow(s.rows);

    const logs = logLines.join('');
    expect(logs).toContain('job failed');
    expect(logs).toContain('email sent');
    expect(logs).not.toContain(s.license.license_key);
    expect(logs).not.toContain('retried@example.com');
    expect(logs).not.toContain('Getting started');
  });
});
