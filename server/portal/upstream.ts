import http from 'node:http';
import type { Readable } from 'node:stream';
import type Koa from 'koa';
import { randomSecret, safeEqual } from '../crypto/secrets.js';
import { RequestError } from '../errors.js';
import { bodyCutOff } from '../http/body.js';

/**
 * The portal reaches the public API over HTTP, on the very socket address the browser's request
 * came in on: every portal action runs through the same routes, validation, rate limits and error
 * bodies as any API client, with no second process and no configured URL to get wrong.
 *
 * Requests forwarded this way would all come from the server's own address, and per-address
 * limits (login) would then be shared by every portal user. So the forwarded request carries the
 * browser's address, attested by a secret that never leaves this process; `acceptForwarded`
 * restores it as `ctx.ip` before any rate limit counts, and strips the headers from anything else.
 */
const FORWARD_SECRET_HEADER = 'x-latchkey-portal-forward';
const FORWARD_CLIENT_HEADER = 'x-latchkey-portal-client';

export interface UpstreamRequest {
  method: string;
  /** Path and query, starting `/v1/`. */
  path: string;
  headers?: Record<string, string>;
  /** Streamed as is (a multipart upload is never buffered). */
  body?: Readable | Buffer;
}

export interface JsonAnswer {
  status: number;
  body: unknown;
  headers: http.IncomingHttpHeaders;
}

export function createUpstream() {
  const secret = randomSecret(32);
  // Kept-alive connections for requests with a small body; idle ones close before the server's
  // own keep-alive timeout (65 s, http-server.ts) would close them under a request.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4000 });
  // A streamed body (an upload) cannot be sent twice: it gets a fresh connection of its own.
  const streamingAgent = new http.Agent({ keepAlive: false });

  function attempt(ctx: Koa.Context, req: UpstreamRequest, retryOnReset: boolean): Promise<http.IncomingMessage> {
    const socket = ctx.req.socket;
    const streamed = req.body !== undefined && !Buffer.isBuffer(req.body);
    // The browser left while its session was checked: its events are past, and a pipe from it would never end.
    if (streamed && (req.body as Readable).destroyed) return Promise.reject(bodyCutOff());
    return new Promise((resolve, reject) => {
      const outgoing = http.request(
        {
          agent: streamed ? streamingAgent : agent,
          host: socket.localAddress,
          port: socket.localPort,
          method: req.method,
          path: req.path,
          headers: { ...req.headers, [FORWARD_SECRET_HEADER]: secret, [FORWARD_CLIENT_HEADER]: ctx.ip },
        },
        resolve,
      );
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        // A kept-alive connection the server closed just as it was reused: nothing was processed; send again once.
        if (retryOnReset && outgoing.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          resolve(attempt(ctx, req, false));
          return;
        }
        ctx.state.log?.warn({ err }, 'portal upstream request failed');
        reject(new RequestError('SERVICE_UNAVAILABLE', 'The portal could not reach the API; retry shortly'));
      });
      if (!req.body) outgoing.end();
      else if (Buffer.isBuffer(req.body)) outgoing.end(req.body);
      else {
        const body = req.body;
        body.pipe(outgoing);
        body.on('error', (err) => outgoing.destroy(err));
        // A browser that gives up mid-upload: the API's request ends too, instead of waiting for the rest.
        body.on('close', () => {
          if (!body.readableEnded) outgoing.destroy();
        });
      }
    });
  }

  /** Sends a request to this server's own public API, as the browser behind `ctx`. */
  const send = (ctx: Koa.Context, req: UpstreamRequest) => attempt(ctx, req, true);

  async function json(ctx: Koa.Context, method: string, path: string, body?: unknown, token?: string): Promise<JsonAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    let payload: Buffer | undefined;
    if (body !== undefined) {
      payload = Buffer.from(JSON.stringify(body));
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const res = await send(ctx, { method, path, headers, body: payload });
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown = undefined;
    if (text && (res.headers['content-type'] ?? '').includes('json')) parsed = JSON.parse(text);
    return { status: res.statusCode ?? 502, body: parsed, headers: res.headers };
  }

  /**
   * The browser's address a request forwarded by this process's portal names, trusted only with
   * this process's secret; the forwarding headers are removed from every request.
   */
  const forwardedClient = (req: http.IncomingMessage): string | undefined => {
    const given = req.headers[FORWARD_SECRET_HEADER];
    if (given === undefined) return undefined;
    const client = req.headers[FORWARD_CLIENT_HEADER];
    delete req.headers[FORWARD_SECRET_HEADER];
    delete req.headers[FORWARD_CLIENT_HEADER];
    return typeof given === 'string' && typeof client === 'string' && client && safeEqual(given, secret) ? client : undefined;
  };

  /** A middleware after the client address: trusts the forwarded client address only with this process's secret. */
  const acceptForwarded: Koa.Middleware = async (ctx, next) => {
    const client = forwardedClient(ctx.req);
    if (client) ctx.request.ip = client;
    await next();
  };

  return { send, json, forwardedClient, acceptForwarded, close: () => agent.destroy() };
}

export type Upstream = ReturnType<typeof createUpstream>;
