/**
 * The agent each SDK request goes out with: direct (Node's default agent), or through the proxy
 * the environment names (proxy-rules.ts). https goes through a CONNECT tunnel, so the proxy sees
 * only the host and port and TLS runs end to end with the authority; http is sent to the proxy
 * with the absolute URL, as HTTP proxies expect. Node's own agents, no library: the SDK is bundled
 * into apps and its footprint must stay small.
 *
 * An agent serves one request (they are made per call: the SDK makes a few an hour), so it can
 * know whether that request may hold the process open; one that may not leaves every socket it
 * opens unref'd, the proxy's included.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { describeProxy, proxyRoute, type ProxyEnv } from './proxy-rules.js';

export interface RouteOptions {
  env: ProxyEnv;
  /** False for work the SDK starts on its own: nothing it opens keeps the process alive. */
  holdsProcess: boolean;
}

/** A proxy setting that cannot be used, or a proxy that refused to connect: Node-style `code`, message without credentials. */
export class ProxyError extends Error {
  constructor(
    readonly code: 'EPROXYCONFIG' | 'EPROXYREFUSED',
    message: string,
  ) {
    super(message);
    this.name = 'ProxyError';
  }
}

/** The agent for one request to `target`; undefined: direct, with Node's default agent. */
export function agentFor(target: URL, options: RouteOptions): http.Agent | undefined {
  const route = proxyRoute(target, options.env);
  if (route.kind === 'direct') return undefined;
  if (route.kind === 'invalid') throw new ProxyError('EPROXYCONFIG', `${route.variable} cannot be used: ${route.reason}`);
  return target.protocol === 'https:' ? new TunnelAgent(route.proxy, options.holdsProcess) : new ForwardingAgent(route.proxy, target, options.holdsProcess);
}

/** Lets the process exit while `socket` is open, unless the request holds it. */
function releaseUnlessHeld(socket: net.Socket, holdsProcess: boolean): void {
  if (!holdsProcess) socket.unref();
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username && !proxy.password) return {};
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(credentials).toString('base64')}` };
}

const proxyPort = (proxy: URL) => Number(proxy.port || 80);

/** https through `CONNECT host:port`, then TLS to the target over the tunnel. */
class TunnelAgent extends https.Agent {
  private readonly tunnels = new Set<http.ClientRequest>();

  constructor(
    private readonly proxy: URL,
    private readonly holdsProcess: boolean,
  ) {
    super({ keepAlive: false });
  }

  // Node's documented asynchronous form: return nothing, hand the socket to the callback.
  override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    const host = options.host ?? 'localhost';
    const authority = `${host.includes(':') ? `[${host}]` : host}:${options.port ?? 443}`;
    const tunnel = http.request({
      host: this.proxy.hostname,
      port: proxyPort(this.proxy),
      method: 'CONNECT',
      path: authority,
      headers: { host: authority, ...proxyAuthorization(this.proxy) },
      agent: false,
    });
    this.tunnels.add(tunnel);
    const done = (err: Error | null, socket?: Duplex) => {
      this.tunnels.delete(tunnel);
      callback?.(err, socket!);
    };
    tunnel.once('socket', (socket) => releaseUnlessHeld(socket, this.holdsProcess));
    tunnel.once('error', (err) => done(err));
    tunnel.once('connect', (answer, socket) => {
      if (answer.statusCode !== 200) {
        socket.destroy();
        return done(new ProxyError('EPROXYREFUSED', `the proxy ${describeProxy(this.proxy)} answered ${answer.statusCode} to CONNECT ${authority}`));
      }
      const secure = tls.connect({
        ...(options as tls.ConnectionOptions),
        socket,
        // SNI takes a name, never an address.
        ...(net.isIP(host) ? {} : { servername: options.servername ?? host }),
      });
      releaseUnlessHeld(socket, this.holdsProcess);
      done(null, secure);
    });
    tunnel.end();
    return undefined;
  }

  /** Also gives up a tunnel still being set up (the request was aborted or timed out). */
  override destroy(): void {
    for (const tunnel of this.tunnels) tunnel.destroy();
    this.tunnels.clear();
    super.destroy();
  }
}

interface AgentInternals {
  addRequest(request: http.ClientRequest, options: http.RequestOptions): void;
}

/** http to the proxy, asking for the absolute URL of the target. */
class ForwardingAgent extends http.Agent {
  constructor(
    private readonly proxy: URL,
    private readonly target: URL,
    private readonly holdsProcess: boolean,
  ) {
    super({ keepAlive: false });
  }

  // Node calls this (left out of its types) with each request before its head is written: the
  // request line names the whole URL, and the proxy may want credentials.
  addRequest(request: http.ClientRequest, options: http.RequestOptions): void {
    request.path = new URL(request.path, this.target.origin).href;
    for (const [name, value] of Object.entries(proxyAuthorization(this.proxy))) request.setHeader(name, value);
    (http.Agent.prototype as unknown as AgentInternals).addRequest.call(this, request, options);
  }

  override createConnection(): net.Socket {
    const socket = net.connect(proxyPort(this.proxy), this.proxy.hostname);
    releaseUnlessHeld(socket, this.holdsProcess);
    return socket;
  }
}
