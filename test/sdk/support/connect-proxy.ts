import http from 'node:http';
import net from 'node:net';
import { closeNow, listenOnLoopback } from '../../support/local-http.js';

/** What reached the proxy: a tunnel (`CONNECT host:port`) or a forwarded request (`GET http://...`). */
export interface ProxiedRequest {
  method: string;
  target: string;
  proxyAuthorization: string | undefined;
}

/**
 * A forward proxy on 127.0.0.1, as companies run: `CONNECT` tunnels for https, absolute-URL
 * requests for http. Records what passes; with `credentials` set it answers 407 to anyone who
 * does not present them, as an authenticating proxy does.
 */
export class ConnectProxy {
  readonly requests: ProxiedRequest[] = [];
  credentials: string | undefined;
  url = '';
  private server = http.createServer((req, res) => void this.forward(req, res));
  /** Tunnels leave the HTTP server's books once established: closed by hand. */
  private readonly tunnels = new Set<net.Socket>();

  constructor() {
    this.server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => this.tunnel(req, client, head));
  }

  async start(): Promise<this> {
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.tunnels) socket.destroy();
    await closeNow(this.server);
  }

  /** `http://user:password@127.0.0.1:port` for the credentials set. */
  urlWithCredentials(user: string, password: string): string {
    this.credentials = `${user}:${password}`;
    return this.url.replace('http://', `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@`);
  }

  private admitted(req: http.IncomingMessage): boolean {
    const presented = req.headers['proxy-authorization'];
    this.requests.push({ method: req.method ?? '', target: req.url ?? '', proxyAuthorization: presented });
    return !this.credentials || presented === `Basic ${Buffer.from(this.credentials).toString('base64')}`;
  }

  private tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer): void {
    client.on('error', () => undefined);
    this.tunnels.add(client);
    client.on('close', () => this.tunnels.delete(client));
    if (!this.admitted(req)) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n');
      return;
    }
    const [host, port] = (req.url ?? '').split(/:(?=\d+$)/) as [string, string];
    const upstream = net.connect(Number(port), host.replace(/^\[|\]$/g, ''), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    this.tunnels.add(upstream);
    upstream.on('close', () => this.tunnels.delete(upstream));
    upstream.on('error', () => client.destroy());
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (!this.admitted(req)) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic' }).end();
      return;
    }
    const { 'proxy-authorization': _credentials, ...headers } = req.headers;
    const upstream = http.request(req.url ?? '', { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }
}
