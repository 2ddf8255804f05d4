import net from 'node:net';

/**
 * A clamd that speaks INSTREAM as ClamAV does: `zINSTREAM\0`, then chunks each preceded by a 4-byte
 * big-endian length, ended by a zero length; it answers `stream: OK\0` or `stream: <name> FOUND\0`
 * and closes. It "detects" any stream containing `signature`. With `answerAfterMs`, each answer
 * waits that long after the stream ended: a scan then stays in progress long enough to interrupt.
 */
export class FakeClamd {
  readonly scanned: Buffer[] = [];
  /** Streams received whose answer has not been sent yet. */
  pending = 0;
  // Half-open: the scanner ends its side once it has sent the stream, and a late answer still goes back.
  private server = net.createServer({ allowHalfOpen: true }, (socket) => this.serve(socket));
  port = 0;

  constructor(
    private readonly signature: string,
    private readonly answerAfterMs = 0,
  ) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: net.Socket): void {
    let buffered = Buffer.alloc(0);
    let commandRead = false;
    const chunks: Buffer[] = [];
    let answering = false;
    socket.on('end', () => {
      if (!answering) socket.end();
    });
    socket.on('data', (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      if (!commandRead) {
        const end = buffered.indexOf(0);
        if (end < 0) return;
        const command = buffered.subarray(0, end).toString();
        buffered = buffered.subarray(end + 1);
        commandRead = true;
        if (command !== 'zINSTREAM') return void socket.end(`${command}: Unknown command\0`);
      }
      while (buffered.length >= 4) {
        const length = buffered.readUInt32BE(0);
        if (length === 0) {
          const stream = Buffer.concat(chunks);
          this.scanned.push(stream);
          const answer = stream.includes(this.signature) ? 'stream: Fake.Test.Signature FOUND\0' : 'stream: OK\0';
          if (this.answerAfterMs === 0) return void socket.end(answer);
          this.pending++;
          answering = true;
          setTimeout(() => {
            this.pending--;
            socket.end(answer);
          }, this.answerAfterMs);
          return;
        }
        if (buffered.length < 4 + length) return;
        chunks.push(buffered.subarray(4, 4 + length));
        buffered = buffered.subarray(4 + length);
      }
    });
    socket.on('error', () => undefined);
  }
}
