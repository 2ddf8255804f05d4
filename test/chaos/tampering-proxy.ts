import http from 'node:http';
import { closeNow, listenOnLoopback } from '../support/local-http.js';

/**
 * A man in the middle between the SDK and the real authority: it forwards every request and, when
 * told to, replaces the runtime token of an activation or refresh answer, or the manifest of an
 * update check, with a forgery.
 */
export class TamperingProxy {
  url = '';
  replaceToken: ((genuine: string) => string) | undefined;
  replaceManifest: ((genuine: string) => string) | undefined;
  private readonly server = http.createServer((req, res) => {
    this.forward(req, res).catch(() => res.destroy());
  });

  constructor(private readonly upstream: string) {}

  async start(): Promise<this> {
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  close(): Promise<void> {
    return closeNow(this.server);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name))) as Record<string, string>;
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const upstream = await fetch(`${this.upstream}${req.url}`, { method: req.method, headers, body });
    let payload = Buffer.from(await upstream.arrayBuffer());
    const path = (req.url ?? '').split('?')[0];
    if (upstream.status === 200 && (upstream.headers.get('content-type') ?? '').includes('json')) {
      const answer = JSON.parse(payload.toString('utf8'));
      if ((path === '/v1/licenses/activate' || path === '/v1/licenses/refresh') && this.replaceToken) answer.token = this.replaceToken(answer.token);
      if (path === '/v1/updates/check' && this.replaceManifest) answer.manifest = this.replaceManifest(answer.manifest);
      payload = Buffer.from(JSON.stringify(answer));
    }
    res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream', 'content-length': payload.length });
    res.end(payload);
  }
}
