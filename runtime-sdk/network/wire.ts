/**
 * node:http, node:https and the proxy agents (agents.ts, with node:net and node:tls), loaded on the
 * first request instead of at start. Together they take 10 to 20 ms to load, and most starts of an
 * app answer from the cache, offline, before any request: those never wait for them.
 */
import type httpModule from 'node:http';
import type httpsModule from 'node:https';
import type * as agentsModule from './agents.js';

export interface Wire {
  http: typeof httpModule;
  https: typeof httpsModule;
  agents: typeof agentsModule;
}

let loading: Promise<Wire> | undefined;

export function loadWire(): Promise<Wire> {
  loading ??= Promise.all([import('node:http'), import('node:https'), import('./agents.js')]).then(([http, https, agents]) => ({
    http: http.default,
    https: https.default,
    agents,
  }));
  return loading;
}
