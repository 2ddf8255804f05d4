import { describe, expect, it } from 'vitest';
import { bypassesProxy, describeProxy, proxyRoute } from './proxy-rules.js';

const route = (target: string, env: Record<string, string>) => proxyRoute(new URL(target), env);
const via = (proxy: string) => ({ kind: 'proxy', proxy: new URL(proxy) });

describe('proxyRoute', () => {
  it('takes HTTPS_PROXY for https and HTTP_PROXY for http, never the other', () => {
    const env = { HTTPS_PROXY: 'http://secure.corp:3128', HTTP_PROXY: 'http://plain.corp:8080' };
    expect(route('https://licensing.example.com/v1', env)).toEqual(via('http://secure.corp:3128'));
    expect(route('http://licensing.example.com/v1', env)).toEqual(via('http://plain.corp:8080'));
    expect(route('https://licensing.example.com/v1', { HTTP_PROXY: 'http://plain.corp:8080' })).toEqual({ kind: 'direct' });
    expect(route('http://licensing.example.com/v1', { HTTPS_PROXY: 'http://secure.corp:3128' })).toEqual({ kind: 'direct' });
  });

  it('prefers the lower-case variable when both are set, and ignores empty ones', () => {
    expect(route('https://a.example.com', { https_proxy: 'http://lower:1', HTTPS_PROXY: 'http://upper:2' })).toEqual(via('http://lower:1'));
    expect(route('https://a.example.com', { https_proxy: ' ', HTTPS_PROXY: 'http://upper:2' })).toEqual(via('http://upper:2'));
    expect(route('https://a.example.com', { HTTPS_PROXY: '' })).toEqual({ kind: 'direct' });
    expect(route('https://a.example.com', { no_proxy: 'a.example.com', NO_PROXY: '', HTTPS_PROXY: 'http://p:1' })).toEqual({ kind: 'direct' });
  });

  it('reads a proxy written without a scheme as http, and keeps its credentials for the proxy', () => {
    expect(route('https://a.example.com', { HTTPS_PROXY: 'proxy.corp:3128' })).toEqual(via('http://proxy.corp:3128'));
    expect(route('https://a.example.com', { HTTPS_PROXY: 'http://ana:p%40ss@proxy.corp:3128' })).toEqual(via('http://ana:p%40ss@proxy.corp:3128'));
  });

  it('refuses a proxy it cannot speak to rather than going around it', () => {
    expect(route('https://a.example.com', { HTTPS_PROXY: 'socks5://127.0.0.1:1080' })).toMatchObject({ kind: 'invalid', variable: 'HTTPS_PROXY' });
    expect(route('https://a.example.com', { https_proxy: 'https://proxy.corp:443' })).toMatchObject({ kind: 'invalid', variable: 'https_proxy' });
    expect(route('https://a.example.com', { HTTPS_PROXY: 'http://' })).toMatchObject({ kind: 'invalid' });
  });

  it('sends NO_PROXY hosts direct before looking at the proxy value', () => {
    expect(route('https://a.example.com', { HTTPS_PROXY: 'socks5://x', NO_PROXY: 'example.com' })).toEqual({ kind: 'direct' });
  });
});

describe('bypassesProxy (NO_PROXY)', () => {
  const bypasses = (target: string, noProxy: string) => bypassesProxy(new URL(target), noProxy);

  it('matches a domain and every host under it, written bare, with a dot or with *.', () => {
    for (const entry of ['example.com', '.example.com', '*.example.com', 'EXAMPLE.COM.']) {
      expect(bypasses('https://example.com', entry)).toBe(true);
      expect(bypasses('https://licensing.example.com', entry)).toBe(true);
      expect(bypasses('https://notexample.com', entry)).toBe(false);
      expect(bypasses('https://example.com.evil.net', entry)).toBe(false);
    }
  });

  it('splits on commas and spaces, and * matches everything', () => {
    expect(bypasses('https://b.corp', 'a.corp, b.corp')).toBe(true);
    expect(bypasses('https://b.corp', 'a.corp b.corp')).toBe(true);
    expect(bypasses('https://c.corp', 'a.corp,,b.corp')).toBe(false);
    expect(bypasses('https://anything.net', '*')).toBe(true);
    expect(bypasses('https://anything.net', '')).toBe(false);
  });

  it('matches a port only when it is the port of the request (default ports included)', () => {
    expect(bypasses('https://a.corp', 'a.corp:443')).toBe(true);
    expect(bypasses('https://a.corp:8443', 'a.corp:443')).toBe(false);
    expect(bypasses('http://a.corp', 'a.corp:80')).toBe(true);
    expect(bypasses('http://127.0.0.1:3000', '127.0.0.1:3000')).toBe(true);
  });

  it('matches IP addresses exactly, and IPv4 and IPv6 ranges', () => {
    expect(bypasses('http://127.0.0.1:3000', '127.0.0.1')).toBe(true);
    expect(bypasses('http://127.0.0.2', '127.0.0.1')).toBe(false);
    expect(bypasses('http://10.20.30.40', '10.0.0.0/8')).toBe(true);
    expect(bypasses('http://11.20.30.40', '10.0.0.0/8')).toBe(false);
    expect(bypasses('http://[::1]:8080', '::1')).toBe(true);
    expect(bypasses('http://[::1]:8080', '[::1]:8080')).toBe(true);
    expect(bypasses('http://[fd00::5]', 'fd00::/8')).toBe(true);
    expect(bypasses('http://10.1.1.1', 'fd00::/8')).toBe(false);
    expect(bypasses('http://a.corp', '10.0.0.0/8')).toBe(false);
  });
});

describe('describeProxy', () => {
  it('never shows the credentials of the proxy URL', () => {
    expect(describeProxy(new URL('http://ana:s3cret@proxy.corp:3128/path'))).toBe('http://proxy.corp:3128');
  });
});
