import { createReadStream } from 'node:fs';
import net from 'node:net';
import type { ClamdAddress } from '../../config.js';
import type { Scanner } from './scanner.js';

/** Within clamd's default StreamMaxLength chunking; each chunk is sent with a 4-byte length. */
const CHUNK_BYTES = 64 * 1024;
const MAX_REPLY_BYTES = 4096;
const TIMEOUT_MS = 5 * 60_000;

/**
 * ClamAV's daemon through its INSTREAM command: `zINSTREAM\0`, then chunks each preceded by their
 * length (4 bytes, big-endian), then a zero length; clamd answers `stream: OK` or
 * `stream: <signature> FOUND`. It unpacks archives itself, so only the artifact is sent.
 */
export function clamdScanner(address: ClamdAddress, timeoutMs = TIMEOUT_MS): Scanner {
  return {
    name: 'clamd',
    async scan(subject, signal) {
      const reply = await instream(address, subject.artifact, AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]));
      if (reply === 'stream: OK') return null;
      const found = /^stream: (.+) FOUND$/.exec(reply);
      if (found) return { scan_status: 'INFECTED', reason: `ClamAV found ${found[1]} in ${subject.describe(subject.artifact)}` };
      throw new Error(`clamd could not scan the artifact: ${reply}`);
    },
  };
}

async function instream(address: ClamdAddress, file: string, signal: AbortSignal): Promise<string> {
  const socket = net.connect(address as net.NetConnectOpts);
  const abort = () => socket.destroy(signal.reason as Error);
  signal.addEventListener('abort', abort, { once: true });
  const reply: Buffer[] = [];
  let replyBytes = 0;
  socket.on('data', (chunk: Buffer) => {
    replyBytes += chunk.length;
    if (replyBytes <= MAX_REPLY_BYTES) reply.push(chunk);
  });
  const closed = new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  closed.catch(() => undefined); // observed below; never an unhandled rejection meanwhile
  // Waits out backpressure; a socket clamd closed early ends the wait too.
  const send = (data: Buffer) =>
    socket.write(data)
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          socket.once('drain', resolve);
          socket.once('close', resolve);
        });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    await send(Buffer.from('zINSTREAM\0'));
    for await (const chunk of createReadStream(file, { highWaterMark: CHUNK_BYTES, signal })) {
      // clamd may answer and close early (a size limit): its answer is what counts.
      if (socket.destroyed) break;
      const length = Buffer.alloc(4);
      length.writeUInt32BE((chunk as Buffer).length);
      await send(Buffer.concat([length, chunk as Buffer]));
    }
    if (!socket.destroyed) socket.end(Buffer.alloc(4));
    await closed;
  } catch (err) {
    socket.destroy();
    // An answer already given (e.g. a size limit, then a reset) explains more than the reset.
    if (reply.length === 0) throw new Error(`clamd is unavailable: ${(err as Error).message}`, { cause: err });
  } finally {
    signal.removeEventListener('abort', abort);
  }
  return Buffer.concat(reply).toString('utf8').replace(/\0+$/, '').trim();
}
