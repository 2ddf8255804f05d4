import type http from 'node:http';
import { BlockList, isIP } from 'node:net';
import type Koa from 'koa';

/**
 * The peers allowed to tell the server who the client is (`X-Forwarded-For`) and how it was reached
 * (`X-Forwarded-Proto`, `X-Forwarded-Host`): the load balancers and reverse proxies in front of it,
 * as LATCHKEY_TRUST_PROXY lists them (docs/operations.md).
 */
export interface TrustedProxies {
  /** Whether any peer is trusted, so forwarded headers are read at all. */
  readonly any: boolean;
  trusts(address: string): boolean;
}

const NO_PROXY: TrustedProxies = { any: false, trusts: () => false };
/** `true`, kept from when the setting was a switch: every peer is trusted. Only for a server reachable through its proxy alone. */
const EVERY_PEER: TrustedProxies = { any: true, trusts: () => true };

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** An address as the rate limits count it: an IPv4 client on a dual-stack socket is its IPv4 address, without a zone. */
export function normaliseAddress(address: string): string {
  const bare = address.replace(/%.*$/, '');
  return IPV4_MAPPED.exec(bare)?.[1] ?? bare;
}

/**
 * The block an address's per-address rate limits count: an IPv4 address itself, an IPv6 address's
 * /64. One host is given a whole /64 (SLAAC, privacy addresses), so counting single IPv6 addresses
 * would let it rotate through 2^64 of them, each with a fresh limit. `address` is normalised.
 */
export function rateBlockOf(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head = '', tail = ''] = address.split('::');
  const groups = (part: string) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const [front, back] = [groups(head), groups(tail)];
  const full = [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** The words the setting took as a switch (zod's stringbool), still meaning what they meant. */
const SWITCH_ON = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);
const SWITCH_OFF = new Set(['', 'false', '0', 'no', 'off', 'n', 'disabled']);

/**
 * LATCHKEY_TRUST_PROXY: addresses and CIDR ranges separated by commas (`10.0.0.0/8,192.168.1.5,
 * fd00::/8`); empty or `false` trusts nobody; `true` trusts every peer (what the switch it
 * replaced did). Throws with the entry that is neither.
 */
export function parseTrustedProxies(value: string): TrustedProxies {
  const setting = value.trim().toLowerCase();
  if (SWITCH_OFF.has(setting)) return NO_PROXY;
  if (SWITCH_ON.has(setting)) return EVERY_PEER;
  const list = new BlockList();
  for (const entry of setting
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const [rawAddress, prefix, ...rest] = entry.split('/');
    const address = normaliseAddress(rawAddress!);
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    if (family === 0 || rest.length > 0 || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits))) {
      throw new Error(`"${entry}" is not an IP address or a CIDR range (10.0.0.0/8, 192.168.1.5, fd00::/8)`);
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return {
    any: true,
    trusts(address) {
      const bare = normaliseAddress(address);
      const family = isIP(bare);
      return family !== 0 && list.check(bare, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/** One `X-Forwarded-For` entry as an address: bare, `a.b.c.d:port` or `[v6]:port`; null when it is none. */
function forwardedHop(entry: string): string | null {
  const hop = entry.trim();
  const candidate = /^\[([^\]]+)\](?::\d+)?$/.exec(hop)?.[1] ?? /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(hop)?.[1] ?? hop;
  const address = normaliseAddress(candidate);
  return isIP(address) ? address : null;
}

/**
 * The client's address. Each trusted proxy appends the address it was reached from to
 * `X-Forwarded-For`, so the list is read from the right, starting at the peer: while the hop is a
 * trusted proxy, the entry before it says who reached that proxy. The first hop that is not a
 * trusted proxy is the client. Entries further left were written by the client itself and count
 * for nothing. An entry that is no address ends the walk at the trusted proxy that passed it on.
 */
export function clientAddress(peer: string, forwardedFor: string | undefined, proxies: TrustedProxies): string {
  let address = normaliseAddress(peer);
  if (!forwardedFor || !proxies.trusts(address)) return address;
  const hops = forwardedFor.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = forwardedHop(hops[i]!);
    if (hop === null) return address;
    address = hop;
    if (!proxies.trusts(address)) return address;
  }
  return address;
}

const FORWARDED_HEADERS = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'];

/**
 * The request's client address (`clientAddress`). Removes the forwarded headers of a peer that is
 * not a trusted proxy, so Koa's `ctx.protocol`, `ctx.secure` and `ctx.host` (the portal's Secure
 * cookies and same-origin check) believe them only from one.
 */
export function resolveClientOf(req: http.IncomingMessage, proxies: TrustedProxies): string {
  const peer = req.socket.remoteAddress ?? '';
  if (!proxies.trusts(peer)) for (const name of FORWARDED_HEADERS) delete req.headers[name];
  const forwardedFor = req.headers['x-forwarded-for'];
  return clientAddress(peer, typeof forwardedFor === 'string' ? forwardedFor : undefined, proxies);
}

/** First middleware: sets `ctx.ip` to the client's address, which everything that counts or records addresses reads. */
export function resolveClientAddress(proxies: TrustedProxies): Koa.Middleware {
  return async (ctx, next) => {
    ctx.request.ip = resolveClientOf(ctx.req, proxies);
    await next();
  };
}
