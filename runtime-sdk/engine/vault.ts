/**
 * The encrypted store of a protected app's files (docs/protocol.md, "Protected builds"):
 * `LKV2` | 12-byte IV | 16-byte GCM tag | AES-256-GCM( container ), the additional data naming
 * the build. The container is a 4-byte big-endian header length, a JSON header `[[path, size], ...]`
 * and the files' bytes in that order. Not compressed: inflating it at every start cost more than the
 * smaller file saved (the protection bench measured it).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const MAGIC = Buffer.from('LKV2', 'ascii');
/** The vault's name where it is a file of its own: a single executable's asset, or beside a launcher's script. */
export const VAULT_ASSET = 'latchkey.vault';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `/`-separated paths relative to the app's folder. */
export type VaultFiles = Map<string, Buffer>;

const aadFor = (buildId: string) => Buffer.from(`latchkey-vault/v2|${buildId}`, 'utf8');

export function sealVault(files: VaultFiles, key: Buffer, buildId: string): Buffer {
  const header = Buffer.from(JSON.stringify([...files].map(([name, bytes]) => [name, bytes.length])), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(header.length);
  const plain = Buffer.concat([length, header, ...files.values()]);
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
    plain = decipher.update(sealed.subarray(MAGIC.length + IV_BYTES + TAG_BYTES));
    // GCM is a stream mode: final() yields no bytes, it checks the tag.
    decipher.final();
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
