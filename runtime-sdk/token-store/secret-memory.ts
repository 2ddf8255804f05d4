/**
 * Where secrets (the runtime token, the license key, the cache key) live while the app runs.
 * With sodium-native: guarded, mlocked pages that are no-access except inside `read`. Without it
 * (no prebuild for the platform): XOR-masked plain buffers, which keep the secret out of casual
 * memory dumps and string scans but nothing more. The status reports which one is in use.
 *
 * Loading sodium-native costs 20 to 60 ms here, more than the whole cached start; so the client
 * starts on masked memory and moves its secrets into sodium memory right after the first answer.
 */
import { randomBytes } from 'node:crypto';
import { importOptional, type OptionalModule } from '../optional-module.js';

export type MemoryProtection = 'sodium' | 'masked';

export interface SecretBuffer {
  /** Lends the bytes to `use`; they are unreadable again afterwards, so copy what must outlive the call. */
  read<T>(use: (bytes: Buffer) => T): T;
  /** Zeroes the secret; later reads throw. */
  dispose(): void;
}

export interface SecretMemory {
  readonly protection: MemoryProtection;
  store(bytes: Uint8Array): SecretBuffer;
}

/**
 * What secret memory uses of sodium-native, written out: the SDK's published types must not need
 * sodium-native's, an optional dependency an app may leave out.
 */
interface Sodium {
  sodium_malloc(size: number): Buffer;
  sodium_mprotect_noaccess(buffer: Buffer): void;
  sodium_mprotect_readonly(buffer: Buffer): void;
  sodium_mprotect_readwrite(buffer: Buffer): void;
  sodium_memzero(buffer: Buffer): void;
}

/** How sodium-native is had: imported where the app carries it, or the copy a protected executable carries (engine/native-addon.ts). */
export type SodiumLoader = () => Promise<OptionalModule<Sodium>>;

export const importSodium: SodiumLoader = () => importOptional<Sodium>('sodium-native');

/**
 * sodium-native's secure memory, or why it cannot be had: not installed beside the app (a bundle
 * that left it out), or no prebuilt binary for the platform.
 */
export async function loadSodiumMemory(load: SodiumLoader = importSodium): Promise<OptionalModule<SecretMemory>> {
  const sodium = await load();
  return sodium.module ? { module: sodiumMemory(sodium.module) } : sodium;
}

function sodiumMemory(sodium: Sodium): SecretMemory {
  return {
    protection: 'sodium',
    store(bytes) {
      // sodium_malloc(0) has no guard pages to protect; keep one byte so every path is the same.
      let secure: ReturnType<Sodium['sodium_malloc']> | undefined = sodium.sodium_malloc(Math.max(bytes.length, 1));
      secure.set(bytes);
      const length = bytes.length;
      sodium.sodium_mprotect_noaccess(secure);
      return {
        read(use) {
          if (!secure) throw new Error('secret was disposed');
          sodium.sodium_mprotect_readonly(secure);
          try {
            return use(secure.subarray(0, length));
          } finally {
            sodium.sodium_mprotect_noaccess(secure);
          }
        },
        dispose() {
          if (!secure) return;
          sodium.sodium_mprotect_readwrite(secure);
          sodium.sodium_memzero(secure);
          sodium.sodium_mprotect_noaccess(secure);
          // The native finalizer sodium_free()s the pages once this reference is gone.
          secure = undefined;
        },
      };
    },
  };
}

export const maskedMemory: SecretMemory = {
  protection: 'masked',
  store(bytes) {
    const mask = randomBytes(bytes.length);
    const masked = Buffer.alloc(bytes.length);
    for (let i = 0; i < bytes.length; i++) masked[i] = bytes[i]! ^ mask[i]!;
    let disposed = false;
    return {
      read(use) {
        if (disposed) throw new Error('secret was disposed');
        const plain = Buffer.alloc(masked.length);
        for (let i = 0; i < masked.length; i++) plain[i] = masked[i]! ^ mask[i]!;
        try {
          return use(plain);
        } finally {
          plain.fill(0);
        }
      },
      dispose() {
        masked.fill(0);
        mask.fill(0);
        disposed = true;
      },
    };
  },
};
