import http from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_CODES, type ErrorCode } from '../errors.js';

/**
 * How long and how much a client may take to say what it wants, before anything authenticates it
 * (issue 18: slow request bodies and headers pinned the server's memory and connections).
 */
export interface RequestLimits {
  /** Largest request head (request line and headers), in bytes: 431 past it. */
  maxHeaderBytes: number;
  /** Time from the connection's first byte of a request to the end of its headers: 408 past it. */
  headersTimeoutMs: number;
  /** Time to read a whole body on every route but uploads: 408 past it. */
  bodyTimeoutMs: number;
  /** Longest pause between two body bytes on any route, uploads included (their floor): 408 past it. */
  bodyIdleTimeoutMs: number;
}

const jsonError = (code: ErrorCode, detail: string) => JSON.stringify({ detail, error_code: code, status_code: ERROR_CODES[code] });

/** A whole HTTP/1.1 answer written on a socket the HTTP parser gave up on; the connection then closes. */
function rawAnswer(code: ErrorCode, reason: string, detail: string): string {
  const body = jsonError(code, detail);
  return (
    `HTTP/1.1 ${ERROR_CODES[code]} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * What Node's HTTP parser refuses before a request exists, answered with the standard error body
 * instead of Node's bare one: headers too large (431), too slow (408), malformed (400).
 */
function answerClientError(limits: RequestLimits) {
  return (err: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    let answer: string;
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      answer = rawAnswer('HEADERS_TOO_LARGE', 'Request Header Fields Too Large', `The request's headers exceed ${limits.maxHeaderBytes} bytes`);
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      answer = rawAnswer('REQUEST_TIMEOUT', 'Request Timeout', `The request's headers took longer than ${limits.headersTimeoutMs} ms`);
    } else {
      answer = rawAnswer('MALFORMED_REQUEST', 'Bad Request', 'The request is not valid HTTP/1.1');
    }
    socket.end(answer);
  };
}

/** Longer than any client or balancer keeps an idle connection, so the client is always the one to close it. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * The HTTP server every process listens with (main.ts, the test server): header bytes and header
 * time capped by Node (`maxHeaderSize`, `headersTimeout`); Node's own total request timeout is
 * off, because body time is judged per route by `guardRequestBodies` (an upload may take hours
 * while its bytes keep coming).
 */
export function createHttpServer(limits: RequestLimits, handler?: http.RequestListener): http.Server {
  const server = http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: 0,
    // How often Node looks for connections past headersTimeout (its default, 30 s, would let a
    // 10 s limit run to 40 s).
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 4))),
  });
  // An idle kept-alive connection is closed by its client first: fetch and undici close theirs after
  // 4 s, and Node's default here (5 s) was so close that a request sent as the server closed could be
  // reset (the likely cause of one ECONNRESET in a test run under load); balancers keep theirs 60 s (AWS ALB).
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.on('clientError', answerClientError(limits));
  if (handler) server.on('request', guardRequestBodies(handler, limits));
  return server;
}

/** How long a stopping server lets requests in flight finish: within `docker stop`'s 10 s default. */
export const SHUTDOWN_DRAIN_MS = 8_000;

/**
 * Stops accepting connections and closes each kept-alive one once its request is answered, then
 * resolves. Node's `close()` closes only the connections idle at that moment: one answering a
 * request then stays open for the whole keep-alive (65 s) and holds the shutdown. Past `drainMs`,
 * whatever is still open (an upload, a client that keeps sending) is cut.
 */
export function closeServer(server: http.Server, drainMs = SHUTDOWN_DRAIN_MS): Promise<void> {
  return new Promise((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    const cut = setTimeout(() => server.closeAllConnections(), drainMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
  });
}

interface BodyWatch {
  /** Upload routes: no total deadline, only the idle one. */
  relaxed: boolean;
}

const watches = new WeakMap<http.IncomingMessage, BodyWatch>();

/**
 * Lets this request's body take as long as it needs while bytes keep arriving (no pause longer
 * than the idle timeout). Called by upload routes once the caller is authenticated: before that, an
 * upload has the same short deadline as every other body.
 */
export function allowLongBody(req: http.IncomingMessage): void {
  const watch = watches.get(req);
  if (watch) watch.relaxed = true;
}

/**
 * Wraps the request handler with body deadlines: a body must arrive within `bodyTimeoutMs`
 * (unless `allowLongBody`), and never pause longer than `bodyIdleTimeoutMs`. Past either, the
 * client gets 408 REQUEST_TIMEOUT with the standard body when nothing was answered yet, and the
 * connection closes: whatever reads the body sees it aborted and keeps nothing.
 */
export function guardRequestBodies(handler: http.RequestListener, limits: RequestLimits): http.RequestListener {
  return (req, res) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (hasBody && !req.complete) watchBody(req, res, limits);
    handler(req, res);
  };
}

function watchBody(req: http.IncomingMessage, res: http.ServerResponse, limits: RequestLimits): void {
  const watch: BodyWatch = { relaxed: false };
  watches.set(req, watch);
  const startedAt = performance.now();
  let lastByteAt = startedAt;
  // The parser hands body bytes to `push` as they arrive, whether or not anyone reads them yet.
  const push = req.push.bind(req);
  req.push = (chunk: unknown, encoding?: BufferEncoding) => {
    lastByteAt = performance.now();
    return push(chunk, encoding);
  };
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  const check = () => {
    timer = undefined;
    if (req.complete || req.destroyed) return;
    const now = performance.now();
    // Bytes waiting to be read mean the server is the slow side, not the client.
    const idleFor = req.readableLength > 0 ? 0 : now - lastByteAt;
    if (idleFor >= limits.bodyIdleTimeoutMs) {
      return timeOut(req, res, `No byte of the request body arrived for ${limits.bodyIdleTimeoutMs} ms`);
    }
    if (!watch.relaxed && now - startedAt >= limits.bodyTimeoutMs) {
      return timeOut(req, res, `The request body took longer than ${limits.bodyTimeoutMs} ms`);
    }
    const next = Math.min(limits.bodyIdleTimeoutMs - idleFor, watch.relaxed ? Infinity : limits.bodyTimeoutMs - (now - startedAt));
    timer = setTimeout(check, Math.max(10, next));
    timer.unref();
  };
  timer = setTimeout(check, Math.min(limits.bodyIdleTimeoutMs, limits.bodyTimeoutMs));
  timer.unref();
  req.once('end', stop);
  req.once('close', stop);
}

function timeOut(req: http.IncomingMessage, res: http.ServerResponse, detail: string): void {
  // Whoever reads the body (and a request already answered is no longer Node's to abort) sees it
  // fail, so a staged upload is removed and nothing waits on the rest.
  const abort = () => req.destroy(Object.assign(new Error(detail), { code: 'ECONNRESET' }));
  if (!res.headersSent && !res.writableEnded) {
    const body = jsonError('REQUEST_TIMEOUT', detail);
    res.writeHead(408, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    // Once the answer is out, the connection goes, and with it the rest of the body.
    res.end(body, abort);
  } else {
    abort();
  }
}
