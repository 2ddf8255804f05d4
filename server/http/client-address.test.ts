import { describe, expect, it } from 'vitest';
import { clientAddress, normaliseAddress, parseTrustedProxies, rateBlockOf } from './client-address.js';

describe('parseTrustedProxies', () => {
  it('trusts nobody when empty or false, every peer when true', () => {
    for (const value of ['', ' ', 'false', 'FALSE']) {
      const proxies = parseTrustedProxies(value);
      expect(proxies.any).toBe(false);
      expect(proxies.trusts('127.0.0.1')).toBe(false);
    }
    const all = parseTrustedProxies('true');
    expect(all.any).toBe(true);
    expect(all.trusts('203.0.113.9')).toBe(true);
  });

  it('trusts the listed addresses and ranges, IPv4 and IPv6, and nothing else', () => {
    const proxies = parseTrustedProxies(' 10.0.0.0/8, 192.168.1.5 ,fd00::/8,::1');
    expect(proxies.any).toBe(true);
    for (const trusted of ['10.0.0.1', '10.255.255.255', '192.168.1.5', '::ffff:10.2.3.4', 'fd00::17', '::1']) {
      expect(proxies.trusts(trusted), trusted).toBe(true);
    }
    for (const other of ['11.0.0.1', '192.168.1.6', '127.0.0.1', 'fe80::1', '', 'not-an-address']) {
      expect(proxies.trusts(other), other).toBe(false);
    }
  });

  it.each(['10.0.0.0/33', '10.0.0/8', 'proxy.internal', '10.0.0.0/8/1', 'fd00::/129', '10.0.0.1/-1'])('refuses %s', (entry) => {
    expect(() => parseTrustedProxies(`127.0.0.1,${entry}`)).toThrow(entry);
  });
});

describe('clientAddress', () => {
  const proxies = parseTrustedProxies('10.0.0.0/8,127.0.0.1');

  it('is the peer when the peer is not a trusted proxy, whatever it forwards', () => {
    expect(clientAddress('203.0.113.9', '198.51.100.1', proxies)).toBe('203.0.113.9');
    expect(clientAddress('203.0.113.9', undefined, proxies)).toBe('203.0.113.9');
    expect(clientAddress('::ffff:203.0.113.9', '10.0.0.1', proxies)).toBe('203.0.113.9');
    expect(clientAddress('127.0.0.1', '198.51.100.1', parseTrustedProxies(''))).toBe('127.0.0.1');
  });

  it('walks X-Forwarded-For from the right past trusted proxies to the first address that is not one', () => {
    expect(clientAddress('127.0.0.1', '198.51.100.1', proxies)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', '198.51.100.1, 10.0.0.3', proxies)).toBe('198.51.100.1');
    // What the client wrote itself, left of the address its proxy saw, counts for nothing.
    expect(clientAddress('10.0.0.2', '1.1.1.1, 2.2.2.2, 198.51.100.1', proxies)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', '10.0.0.9,10.0.0.8', proxies)).toBe('10.0.0.9');
  });

  it('reads ports, brackets and IPv4-mapped addresses, and stops at an entry that is no address', () => {
    expect(clientAddress('10.0.0.2', '198.51.100.1:4711', proxies)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', '[2001:db8::5]:443', proxies)).toBe('2001:db8::5');
    expect(clientAddress('10.0.0.2', '::ffff:198.51.100.1', proxies)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', 'unknown', proxies)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '198.51.100.1, , 10.0.0.3', proxies)).toBe('10.0.0.3');
  });

  it('trusts every hop with true, so the leftmost entry is the client', () => {
    expect(clientAddress('203.0.113.9', '198.51.100.1, 203.0.113.10', parseTrustedProxies('true'))).toBe('198.51.100.1');
  });
});

describe('normaliseAddress', () => {
  it('writes IPv4-mapped addresses as IPv4 and drops zones', () => {
    expect(normaliseAddress('::FFFF:127.0.0.1')).toBe('127.0.0.1');
    expect(normaliseAddress('fe80::1%eth0')).toBe('fe80::1');
    expect(normaliseAddress('2001:db8::1')).toBe('2001:db8::1');
  });
});

describe('rateBlockOf', () => {
  it('counts an IPv4 address as itself', () => {
    expect(rateBlockOf('203.0.113.9')).toBe('203.0.113.9');
  });

  it('counts every address of one IPv6 /64 as one block, however it is written', () => {
    const block = '2001:db8:1:2::/64';
    for (const address of ['2001:db8:1:2::1', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:DB8:1:2:a:b:c:d', '2001:db8:1:2::1.2.3.4']) {
      expect(rateBlockOf(address), address).toBe(block);
    }
    expect(rateBlockOf('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(rateBlockOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(rateBlockOf('::1')).toBe('0:0:0:0::/64');
    expect(rateBlockOf('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
  });
});
