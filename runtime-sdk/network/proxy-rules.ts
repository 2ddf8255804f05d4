/**
 * Which proxy, if any, a request goes through, from the environment variables companies set:
 * `HTTPS_PROXY` for https URLs, `HTTP_PROXY` for http URLs, `NO_PROXY` for the hosts reached
 * directly; each also in lower case, which wins when both are set (curl's rule: lower case is the
 * older convention, and CGI servers put request headers in upper-case `HTTP_*` variables).
 * Pure: no sockets, so every rule is tested beside this file.
 */
import { BlockList, isIP } from 'node:net';

/** The variables read; anything else in the environment is ignored. */
export type ProxyEnv = Readonly<Partial<Record<string, string>>>;

export type ProxyRoute =
  | { kind: 'direct' }
  | { kind: 'proxy'; proxy: URL }
  /** The variable is set but names no usable proxy: going direct would slip past the company's proxy, so the request fails. */
  | { kind: 'invalid'; variable: string; reason: string };

const DIRECT: ProxyRoute = { kind: 'direct' };

/** The route for `target` under `env`. */
export function proxyRoute(target: URL, env: ProxyEnv): ProxyRoute {
  const scheme = target.protocol === 'https:' ? 'https' : target.protocol === 'http:' ? 'http' : undefined;
  if (!scheme) return DIRECT;
  const variable = [`${scheme}_proxy`, `${scheme.toUpperCase()}_PROXY`].find((name) => env[name]?.trim());
  if (!variable) return DIRECT;
  if (bypassesProxy(target, env.no_proxy ?? env.NO_PROXY ?? '')) return DIRECT;
  const value = env[variable]!.trim();
  // `proxy.corp:3128` is how many people write it: plain http to the proxy.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  if (!URL.canParse(withScheme)) return { kind: 'invalid', variable, reason: 'not a URL' };
  const proxy = new URL(withScheme);
  if (proxy.protocol !== 'http:') return { kind: 'invalid', variable, reason: `${proxy.protocol.replace(':', '')} proxies are not supported, only http://` };
  if (!proxy.hostname) return { kind: 'invalid', variable, reason: 'no host' };
  return { kind: 'proxy', proxy };
}

/**
 * Whether `NO_PROXY` sends `target` direct. Entries are separated by commas or spaces: `*` (every
 * host), a domain (`example.com`, `.example.com` or `*.example.com`: the domain and every host
 * under it), an IP address, an IPv4 or IPv6 range (`10.0.0.0/8`), each optionally with `:port`
 * (only that port). Case and a trailing dot do not matter.
 */
export function bypassesProxy(target: URL, noProxy: string): boolean {
  const host = bareHost(target.hostname);
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  return noProxy
    .split(/[\s,]+/)
    .filter(Boolean)
    .some((entry) => matches(entry.toLowerCase(), host, port));
}

function matches(entry: string, host: string, port: string): boolean {
  if (entry === '*') return true;
  const { pattern, entryPort } = splitPort(entry);
  if (entryPort && entryPort !== port) return false;
  const range = /^(.+)\/(\d{1,3})$/.exec(pattern);
  if (range) return inRange(host, range[1]!, Number(range[2]));
  const domain = bareHost(pattern.replace(/^\*?\./, ''));
  if (!domain) return false;
  return host === domain || (isIP(domain) === 0 && host.endsWith(`.${domain}`));
}

/** `host:port`, `[v6]:port` and `v6` (several colons, no brackets: no port). */
function splitPort(entry: string): { pattern: string; entryPort?: string } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { pattern: bracketed[1]!, ...(bracketed[2] ? { entryPort: bracketed[2] } : {}) };
  const hostPort = /^([^:]+):(\d+)$/.exec(entry);
  return hostPort ? { pattern: hostPort[1]!, entryPort: hostPort[2]! } : { pattern: entry };
}

function inRange(host: string, network: string, prefix: number): boolean {
  const family = isIP(network);
  if (family === 0 || isIP(host) !== family || prefix > (family === 4 ? 32 : 128)) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  list.addSubnet(network, prefix, type);
  return list.check(host, type);
}

/** Lower case, without IPv6 brackets or a trailing dot. */
function bareHost(hostname: string): string {
  return hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** The proxy as logs and errors may show it: scheme, host and port, never the credentials a URL can carry. */
export function describeProxy(proxy: URL): string {
  return `${proxy.protocol}//${proxy.host}`;
}
