import http from 'node:http';
import type { RecordedRequest } from './fake-authority.js';
import { closeNow, listenOnLoopback } from '../../support/local-http.js';

/**
 * A fixed address in front of the real server, so it can be stopped and started again (on another
 * port) while the SDK keeps one `serverUrl`. Records every request the SDK sends. With no upstream
 * it drops connections: to the SDK, the authority is unreachable. With `loseAnswers`, it forwards each
 * request and drops the connection instead of passing the answer back: the authority acted, its
 * answer was lost on the way. With `refuseConsume`, consumptions get that answer instead.
 */
export class RecordingProxy {
  readonly requests: RecordedRequest[] = [];
  upstream: string | null = null;
  /** How long each request waits before it is forwarded: a slow network. */
  delayMs = 0;
  loseAnswers = false;
  /** Answered to every consumption instead of forwarding it: an authority that refuses what this SDK sends. */
  refuseConsume: { status: number; body: object } | null = null;
  url = '';
  private server = http.createServer((req, res) => void this.forward(req, res));

  async start(): Promise<this> {
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  async close(): Promise<void> {
    await closeNow(this.server);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    this.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (!this.upstream) {
      req.socket.destroy();
      return;
    }
    if (this.refuseConsume && req.url === '/v1/licenses/consume') {
      res.writeHead(this.refuseConsume.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(this.refuseConsume.body));
      return;
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name))) as Record<string, string>;
    const upstream = await fetch(`${this.upstream}${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) });
    const payload = Buffer.from(await upstream.arrayBuffer());
    if (this.loseAnswers) {
      req.socket.destroy();
      return;
    }
    const forwarded: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) forwarded[name] = value;
    });
    res.writeHead(upstream.status, forwarded);
    res.end(payload);
  }
}
