import { describe, expect, it } from 'vitest';
import { loadSodiumMemory, maskedMemory, type SecretMemory } from '../../runtime-sdk/token-store/secret-memory.js';

const sodium = (await loadSodiumMemory()).module;

describe.each([
  ['sodium', sodium!],
  ['masked', maskedMemory],
] as [string, SecretMemory][])('%s secret memory', (name, memory) => {
  it('lends the bytes inside read() only, and refuses them after dispose()', () => {
    expect(memory.protection).toBe(name);
    const secret = memory.store(Buffer.from('eyJhbGciOiJFZERTQSJ9.token', 'utf8'));
    expect(secret.read((bytes) => bytes.toString('utf8'))).toBe('eyJhbGciOiJFZERTQSJ9.token');
    let lent: Buffer | undefined;
    secret.read((bytes) => {
      lent = name === 'masked' ? bytes : undefined;
    });
    // The masked fallback zeroes its temporary plain copy once read() returns.
    if (lent) expect(lent.every((b) => b === 0)).toBe(true);
    secret.dispose();
    expect(() => secret.read(() => undefined)).toThrow(/disposed/);
    secret.dispose();
  });

  it('keeps an empty secret', () => {
    expect(memory.store(new Uint8Array(0)).read((bytes) => bytes.length)).toBe(0);
  });
});

it('sodium-native loads on this platform (the prebuilt binary ships inside the package)', () => {
  expect(sodium?.protection).toBe('sodium');
});
