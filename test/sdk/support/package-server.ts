import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { closeNow, listenOnLoopback } from '../../support/local-http.js';

/**
 * Serves one package at `/package` the way the authority's download link does (Range, 206, 416),
 * with knobs for what a hostile or broken network does: a cut connection, an ignored Range, a body
 * longer or shorter than declared, endless bytes, a stalled answer, scripted error statuses.
 */
export class PackageServer {
  bytes: Buffer = Buffer.alloc(0);
  /** Range headers of every request, undefined when none was sent. */
  readonly ranges: (string | undefined)[] = [];
  /** The next full or partial answer drops the connection after this many body bytes (it declares them all). */
  cutAfter: number | undefined;
  ignoreRange = false;
  /** Appended to the body: a server sending more than the manifest says. */
  extra: Buffer = Buffer.alloc(0);
  /** Sends random bytes until the client hangs up (an endless-data attack). */
  endless = false;
  /** Omits Content-Length (chunked), so the client cannot know the size ahead. */
  undeclared = false;
  /** Answers headers and then nothing. */
  stall = false;
  /** Statuses answered first, in order. */
  readonly failures: number[] = [];
  url = '';
  private readonly server = http.createServer((req, res) => this.handle(req, res));

  async start(): Promise<this> {
    this.url = `${await listenOnLoopback(this.server)}/package`;
    return this;
  }

  close(): Promise<void> {
    return closeNow(this.server);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.ranges.push(req.headers.range);
    const failure = this.failures.shift();
    if (failure !== undefined) {
      res.writeHead(failure);
      res.end();
      return;
    }
    if (this.stall) {
      res.writeHead(200, { 'content-length': this.bytes.length });
      res.flushHeaders();
      return;
    }
    if (this.endless) return this.sendForever(res);
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = range && !this.ignoreRange ? Number(range[1]) : 0;
    if (start >= this.bytes.length && range && !this.ignoreRange) {
      res.writeHead(416, { 'content-range': `bytes */${this.bytes.length}` });
      res.end();
      return;
    }
    const body = Buffer.concat([this.bytes.subarray(start), this.extra]);
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
    if (!this.undeclared) headers['content-length'] = body.length;
    if (start > 0) headers['content-range'] = `bytes ${start}-${this.bytes.length - 1}/${this.bytes.length}`;
    res.writeHead(start > 0 ? 206 : 200, headers);
    if (this.cutAfter !== undefined) {
      const cut = this.cutAfter;
      this.cutAfter = undefined;
      res.write(body.subarray(0, cut), () => res.destroy());
      return;
    }
    res.end(body);
  }

  private sendForever(res: http.ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const block = randomBytes(64 * 1024);
    const pump = () => {
      while (!res.destroyed && res.write(block));
      if (!res.destroyed) res.once('drain', pump);
    };
    res.once('close', () => res.removeAllListeners('drain'));
    pump();
  }
}
