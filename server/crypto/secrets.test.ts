import { describe, expect, it } from 'vitest';
import { newId, randomHex, randomSecret } from './secrets.js';

describe('random ids and secrets', () => {
  it('have the length asked for and never repeat across refills of the pool', () => {
    const seen = new Set<string>();
    // 20,000 ids of 12 bytes: some 60 refills of the 4 KB pool.
    for (let i = 0; i < 20_000; i++) seen.add(newId('x'));
    expect(seen.size).toBe(20_000);
    expect(randomHex(16)).toMatch(/^[0-9a-f]{32}$/);
    expect(randomSecret()).toMatch(/^[\w-]{43}$/);
    // Larger than the pool hands out: drawn directly.
    expect(randomHex(1024)).toMatch(/^[0-9a-f]{2048}$/);
  });

  it('are not all zero or constant: every byte value shows up', () => {
    const bytes = Buffer.from(Array.from({ length: 400 }, () => randomHex(12)).join(''), 'hex');
    expect(new Set(bytes).size).toBe(256);
  });
});
