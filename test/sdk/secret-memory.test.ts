import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSodiumMemory, maskedMemory, type SecretMemory } from '../../runtime-sdk/token-store/secret-memory.js';
import { FakeAuthority } from './support/fake-authority.js';
import { FakeClock } from './support/fake-clock.js';
import { fakeMachine, tempDir } from './support/fake-machine.js';
import { clientOn } from './support/sdk-client.js';

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

describe('secure memory that cannot be had, in a running client', () => {
  const KEY = 'SODI-2345-6789-ABCD';
  const clock = new FakeClock();
  let authority: FakeAuthority;
  beforeAll(async () => {
    authority = await new FakeAuthority(clock).start();
    authority.addLicense(KEY, { deviceLimit: 10 });
  });
  afterAll(() => authority.close());

  const sodiumPastTheLockedMemoryLimit = {
    sodium_malloc: () => {
      throw new Error('ENOMEM: sodium_malloc failed');
    },
    sodium_mprotect_noaccess: () => {},
    sodium_mprotect_readonly: () => {},
    sodium_mprotect_readwrite: () => {},
    sodium_memzero: () => {},
  };
  const loaders: [string, () => Promise<unknown>, string][] = [
    [
      'a loader that throws before returning a promise',
      () => {
        throw new Error('no addon here');
      },
      'no addon here',
    ],
    ['a loader that gives nothing', async () => undefined, 'gave nothing'],
    ['sodium_malloc failing (past the locked-memory limit)', async () => sodiumPastTheLockedMemoryLimit, 'ENOMEM'],
  ];
  it.each(loaders)('%s: the app runs on, on masked memory, and the logger says why', async (_name, loadSodium, reason) => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    const warnings: string[] = [];
    const logger = { warn: (message: string, fields?: Record<string, unknown>) => warnings.push(`${message}: ${String(fields?.reason)}`) };
    const client = await clientOn(fakeMachine('SODIUM'), authority, clock, tempDir(), { memoryProtection: 'auto', loadSodium, logger });
    try {
      expect((await client.activate(KEY)).state).toBe('valid');
      for (let i = 0; i < 100 && !warnings.some((w) => w.startsWith('secrets stay in masked memory')); i++) await new Promise((r) => setTimeout(r, 10));
      expect(warnings.find((w) => w.startsWith('secrets stay in masked memory'))).toContain(reason);
      // Every secret still where it was, readable: the token is checked and the cache re-read.
      expect(await client.check()).toMatchObject({ state: 'valid', memoryProtection: 'masked' });
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await client.dispose();
    }
  });
});
