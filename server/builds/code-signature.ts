/**
 * Whether an executable carries a code signature, read from its structure alone (no certificate is
 * verified: that is the operating system's job on the customer's machine):
 * - a PE (Windows) has an Authenticode certificate table: a non-empty IMAGE_DIRECTORY_ENTRY_SECURITY
 *   data directory pointing at a WIN_CERTIFICATE inside the file;
 * - a Mach-O (macOS) has an LC_CODE_SIGNATURE load command; a fat (universal) file has one in every slice.
 * Pure functions over a reader, so a package of gigabytes is never held in memory.
 */
import { createHash } from 'node:crypto';

/** `length` bytes at `offset` (fewer at the end of the file). */
export type ReadAt = (offset: number, length: number) => Promise<Buffer>;

export type ExecutableKind = 'pe' | 'mach_o';

/** Where a PE keeps what signing changes: the checksum, the security directory entry and the certificate table. */
export interface PeLayout {
  checksumOffset: number;
  securityEntryOffset: number;
  /** The certificate table (file offset and size); null when the directory is empty. */
  certificates: { offset: number; size: number } | null;
}

const IMAGE_DIRECTORY_ENTRY_SECURITY = 4;
const WIN_CERT_REVISION_2_0 = 0x0200;
const WIN_CERT_TYPE_PKCS_SIGNED_DATA = 0x0002;
const LC_CODE_SIGNATURE = 0x1d;
/** A universal file holds a slice per architecture: a handful; more means it is not one (a Java class shares 0xcafebabe). */
const MAX_FAT_SLICES = 32;
/** Load commands are bounded by the header's `sizeofcmds`; this caps what is read of a hostile one. */
const MAX_LOAD_COMMAND_BYTES = 16 * 1024 * 1024;

/** The PE's layout, or null when the bytes are not a PE (no `MZ`, no `PE\0\0`, no optional header with a security directory). */
export async function readPeLayout(read: ReadAt): Promise<PeLayout | null> {
  const dos = await read(0, 64);
  if (dos.length < 64 || dos.toString('latin1', 0, 2) !== 'MZ') return null;
  const pe = dos.readUInt32LE(0x3c);
  const head = await read(pe, 24 + 240);
  if (head.length < 24 || head.readUInt32BE(0) !== 0x50450000) return null; // "PE\0\0"
  const optionalSize = head.readUInt16LE(20);
  const optional = 24;
  if (head.length < optional + 2) return null;
  const magic = head.readUInt16LE(optional);
  // PE32 and PE32+ differ in where the data directories begin (ImageBase is 4 or 8 bytes, and so on).
  const layout = magic === 0x10b ? { count: 92, directories: 96 } : magic === 0x20b ? { count: 108, directories: 112 } : null;
  if (!layout) return null;
  const entry = optional + layout.directories + IMAGE_DIRECTORY_ENTRY_SECURITY * 8;
  if (head.length < entry + 8 || optionalSize < layout.directories + (IMAGE_DIRECTORY_ENTRY_SECURITY + 1) * 8) return null;
  if (head.readUInt32LE(optional + layout.count) <= IMAGE_DIRECTORY_ENTRY_SECURITY) return null;
  // The security directory's "address" is a file offset, not an RVA: the table is not mapped.
  const offset = head.readUInt32LE(entry);
  const size = head.readUInt32LE(entry + 4);
  return {
    checksumOffset: pe + optional + 64,
    securityEntryOffset: pe + entry,
    certificates: offset > 0 && size > 0 ? { offset, size } : null,
  };
}

/** An Authenticode signature: a certificate table inside the file starting with a WIN_CERTIFICATE of PKCS#7 signed data. */
export async function hasAuthenticodeSignature(read: ReadAt, fileSize: number, layout: PeLayout): Promise<boolean> {
  const table = layout.certificates;
  if (!table || table.offset + table.size > fileSize) return false;
  const header = await read(table.offset, 8);
  if (header.length < 8) return false;
  const length = header.readUInt32LE(0);
  return length > 8 && length <= table.size && header.readUInt16LE(4) === WIN_CERT_REVISION_2_0 && header.readUInt16LE(6) === WIN_CERT_TYPE_PKCS_SIGNED_DATA;
}

type Endian = 'LE' | 'BE';

/** The kind of a thin Mach-O header at `offset`, or null. */
function thinMachO(magic: Buffer): { endian: Endian; headerBytes: number } | null {
  if (magic.length < 4) return null;
  for (const endian of ['LE', 'BE'] as const) {
    const value = endian === 'LE' ? magic.readUInt32LE(0) : magic.readUInt32BE(0);
    if (value === 0xfeedface) return { endian, headerBytes: 28 };
    if (value === 0xfeedfacf) return { endian, headerBytes: 32 };
  }
  return null;
}

/** The thin Mach-O at `base` has an LC_CODE_SIGNATURE naming some bytes; null when there is no Mach-O there. */
async function thinHasCodeSignature(read: ReadAt, base: number): Promise<boolean | null> {
  const header = await read(base, 32);
  const kind = thinMachO(header);
  if (!kind || header.length < kind.headerBytes) return null;
  const u32 = (b: Buffer, at: number) => (kind.endian === 'LE' ? b.readUInt32LE(at) : b.readUInt32BE(at));
  const count = u32(header, 16);
  const size = Math.min(u32(header, 20), MAX_LOAD_COMMAND_BYTES);
  const commands = await read(base + kind.headerBytes, size);
  let at = 0;
  for (let i = 0; i < count && at + 8 <= commands.length; i++) {
    const cmdsize = u32(commands, at + 4);
    // linkedit_data_command: cmd, cmdsize, dataoff, datasize.
    if (u32(commands, at) === LC_CODE_SIGNATURE && at + 16 <= commands.length) return u32(commands, at + 12) > 0;
    if (cmdsize < 8) return false; // malformed: a loader would stop here too
    at += cmdsize;
  }
  return false;
}

/** A Mach-O code signature; null when the bytes are not a Mach-O (thin or fat). */
export async function machOCodeSignature(read: ReadAt): Promise<boolean | null> {
  const head = await read(0, 8);
  if (head.length < 8) return null;
  const fat = head.readUInt32BE(0);
  if (fat !== 0xcafebabe && fat !== 0xcafebabf) return thinHasCodeSignature(read, 0);
  const slices = head.readUInt32BE(4);
  if (slices === 0 || slices > MAX_FAT_SLICES) return null;
  // fat_arch: cputype, cpusubtype, offset, size, align (32-bit fields); fat_arch_64: offset and size are 64-bit, then align, reserved.
  const entryBytes = fat === 0xcafebabe ? 20 : 32;
  const table = await read(8, slices * entryBytes);
  if (table.length < slices * entryBytes) return null;
  for (let i = 0; i < slices; i++) {
    const entry = i * entryBytes;
    const offset = fat === 0xcafebabe ? table.readUInt32BE(entry + 8) : Number(table.readBigUInt64BE(entry + 8));
    const signed = await thinHasCodeSignature(read, offset);
    if (signed !== true) return signed === null ? null : false;
  }
  return true;
}

/** Whether the executable of `kind` carries its code signature; false too when the bytes are not that kind of executable. */
export async function carriesCodeSignature(kind: ExecutableKind, read: ReadAt, fileSize: number): Promise<boolean> {
  if (kind === 'mach_o') return (await machOCodeSignature(read)) === true;
  const layout = await readPeLayout(read);
  return layout !== null && (await hasAuthenticodeSignature(read, fileSize, layout));
}

const CHUNK = 1024 * 1024;

/** Where the bytes before `end` stop being zeros. */
async function withoutTrailingZeros(read: ReadAt, end: number): Promise<number> {
  while (end > 0) {
    const start = Math.max(0, end - 4096);
    const block = await read(start, end - start);
    let i = block.length - 1;
    while (i >= 0 && block[i] === 0) i--;
    if (i >= 0) return start + i + 1;
    end = start;
  }
  return 0;
}

/**
 * The SHA-256 of a PE's program without its signature: every byte up to the certificate table (the
 * end of the file when there is none), with the checksum and the security directory entry zeroed and
 * the zero bytes before it left out (a signer pads the file to 8 bytes before appending the table, and
 * a section is padded with zeros to the file alignment already, so where one ends is not telling). Signing
 * changes exactly these, so a package and its signed copy have the same program digest. Null when
 * the bytes are not a PE.
 */
export async function peProgramDigest(read: ReadAt, fileSize: number): Promise<string | null> {
  const layout = await readPeLayout(read);
  if (!layout) return null;
  const end = await withoutTrailingZeros(read, layout.certificates && layout.certificates.offset <= fileSize ? layout.certificates.offset : fileSize);
  const zeroed = [
    { offset: layout.checksumOffset, length: 4 },
    { offset: layout.securityEntryOffset, length: 8 },
  ];
  const hash = createHash('sha256');
  for (let at = 0; at < end; at += CHUNK) {
    const chunk = Buffer.from(await read(at, Math.min(CHUNK, end - at)));
    for (const field of zeroed) {
      const from = Math.max(field.offset, at);
      const to = Math.min(field.offset + field.length, at + chunk.length);
      if (from < to) chunk.fill(0, from - at, to - at);
    }
    hash.update(chunk);
  }
  return hash.digest('hex');
}
