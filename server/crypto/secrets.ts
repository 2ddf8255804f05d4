import { hash, randomBytes, randomFillSync, randomInt, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;

/** Prefixed resource id such as `app_9f3c...`: 96 random bits, hex. */
export function newId(prefix: string): string {
  return `${prefix}_${randomHex(12)}`;
}

/**
 * Random bytes drawn from the operating system's generator 4 KB at a time: one call into OpenSSL per
 * hundred ids or secrets instead of one each (it showed in the sale paths' profiles, a sale minting
 * several ids). Each byte is handed out once and zeroed as it is.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolUsed = POOL_BYTES;

function drawRandom(bytes: number, encoding: 'hex' | 'base64url'): string {
  if (bytes > POOL_BYTES / 8) return randomBytes(bytes).toString(encoding);
  if (poolUsed + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolUsed = 0;
  }
  const drawn = pool.toString(encoding, poolUsed, poolUsed + bytes);
  pool.fill(0, poolUsed, poolUsed + bytes);
  poolUsed += bytes;
  return drawn;
}

export function randomHex(bytes: number): string {
  return drawRandom(bytes, 'hex');
}

/** A high-entropy secret, URL-safe. */
export function randomSecret(bytes = 32): string {
  return drawRandom(bytes, 'base64url');
}

/** Characters for human-typed codes: upper-case alphanumerics without look-alikes (0 O 1 I L). */
export const HUMAN_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';

export function randomHumanCode(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += HUMAN_ALPHABET[randomInt(HUMAN_ALPHABET.length)];
  return out;
}

export function sha256Hex(value: string | Buffer): string {
  // One-shot: a third of createHash's cost, and every API-key request hashes its key.
  return hash('sha256', value, 'hex');
}

/** Constant-time equality of two strings (length differences leak only the length). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

// scrypt cost: N=2^15, r=8 (about 32 MiB, ~60 ms here): OWASP's recommended floor.
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password.normalize('NFKC'), salt, 32, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** A well-formed hash of a random password: login of an unknown email costs the same as a real one. */
export const DUMMY_PASSWORD_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await scryptAsync(password.normalize('NFKC'), Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(actual, expected);
}
