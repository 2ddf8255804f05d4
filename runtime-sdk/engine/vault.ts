/**
 * The encrypted store of a protected app's files (docs/protocol.md, "Protected builds"):
 * `LKV1` | 12-byte IV | 16-byte GCM tag | AES-256-GCM( gzip( container ) ), the additional data
 * naming the build. The container is a 4-byte big-endian header length, a JSON header
 * `[[path, size], ...]` and the files' bytes in that order. Compressed before encryption: nothing
 * of the app survives as a compressed stream a scanner could inflate.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';

const MAGIC = Buffer.from('LKV1', 'ascii');
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `/`-separated paths relative to the app's folder. */
export type VaultFiles = Map<string, Buffer>;

const aadFor = (buildId: string) => Buffer.from(`latchkey-vault/v1|${buildId}`, 'utf8');

export function sealVault(files: VaultFiles, key: Buffer, buildId: string): Buffer {
  const header = Buffer.from(JSON.stringify([...files].map(([name, bytes]) => [name, bytes.length])), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(header.length);
  const plain = gzipSync(Buffer.concat([length, header, ...files.values()]), { level: 9 });
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aadFor(buildId));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([MAGIC, iv, cipher.getAuthTag(), body]);
}

/** The files, or null when the key is not this vault's or the bytes were altered. */
export function openVault(sealed: Buffer, key: Buffer, buildId: string): VaultFiles | null {
  if (sealed.length < MAGIC.length + IV_BYTES + TAG_BYTES || !sealed.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  let plain: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(MAGIC.length, MAGIC.length + IV_BYTES));
    decipher.setAAD(aadFor(buildId));
    decipher.setAuthTag(sealed.subarray(MAGIC.length + IV_BYTES, MAGIC.length + IV_BYTES + TAG_BYTES));
    plain = gunzipSync(Buffer.concat([decipher.update(sealed.subarray(MAGIC.length + IV_BYTES + TAG_BYTES)), decipher.final()]));
  } catch {
    return null;
  }
  const headerLength = plain.readUInt32BE(0);
  const entries = JSON.parse(plain.subarray(4, 4 + headerLength).toString('utf8')) as [string, number][];
  const files: VaultFiles = new Map();
  let at = 4 + headerLength;
  for (const [name, size] of entries) {
    files.set(name, plain.subarray(at, at + size));
    at += size;
  }
  return files;
}
