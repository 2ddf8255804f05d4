/**
 * Tiny executables, built byte by byte, with and without a code signature: a PE (PE32 or PE32+)
 * whose security directory points at an Authenticode certificate table, and a Mach-O (thin, 32 or
 * 64-bit, either byte order, or fat) with or without an LC_CODE_SIGNATURE load command. Enough
 * structure for a loader's reading of the headers; nothing in them runs.
 */

export interface PeOptions {
  /** PE32+ (64-bit) unless told. */
  pe32?: boolean;
  /** The program's bytes after the headers. */
  program?: string;
  /** Signed with this as its PKCS#7 content (see `withAuthenticode`). */
  signature?: string;
}

const PE_OFFSET = 0x40;

/** An unsigned PE: its headers and `program`; signed too when `signature` is given. */
export function peFile(options: PeOptions = {}): Buffer {
  const plus = !options.pe32;
  const optionalSize = plus ? 240 : 224;
  const headers = Buffer.alloc(PE_OFFSET + 24 + optionalSize);
  headers.write('MZ', 0, 'latin1');
  headers.writeUInt32LE(PE_OFFSET, 0x3c);
  headers.writeUInt32BE(0x50450000, PE_OFFSET);
  headers.writeUInt16LE(plus ? 0x8664 : 0x14c, PE_OFFSET + 4);
  headers.writeUInt16LE(optionalSize, PE_OFFSET + 20);
  const optional = PE_OFFSET + 24;
  headers.writeUInt16LE(plus ? 0x20b : 0x10b, optional);
  headers.writeUInt32LE(16, optional + (plus ? 108 : 92)); // NumberOfRvaAndSizes
  const unsigned = Buffer.concat([headers, Buffer.from(options.program ?? 'the program')]);
  return options.signature === undefined ? unsigned : withAuthenticode(unsigned, options.signature);
}

/**
 * The PE signed as a signer (signtool) does it: a certificate table already there is dropped, the
 * file is padded to 8 bytes, a WIN_CERTIFICATE of PKCS#7 signed data holding `signature` is appended,
 * and the security directory and the checksum are set. Works on any PE (a real executable too).
 */
export function withAuthenticode(pe: Buffer, signature: string): Buffer {
  const header = pe.readUInt32LE(0x3c);
  const optional = header + 24;
  const directories = pe.readUInt16LE(optional) === 0x20b ? 112 : 96;
  const security = optional + directories + 4 * 8;
  const existing = pe.readUInt32LE(security);
  const unsigned = existing > 0 ? pe.subarray(0, existing) : pe;
  const padded = Buffer.concat([unsigned, Buffer.alloc((8 - (unsigned.length % 8)) % 8)]);
  const content = Buffer.from(signature);
  const certificate = Buffer.alloc(8 + content.length);
  certificate.writeUInt32LE(certificate.length, 0);
  certificate.writeUInt16LE(0x0200, 4); // WIN_CERT_REVISION_2_0
  certificate.writeUInt16LE(0x0002, 6); // WIN_CERT_TYPE_PKCS_SIGNED_DATA
  content.copy(certificate, 8);
  const signed = Buffer.concat([padded, certificate]);
  signed.writeUInt32LE(padded.length, security);
  signed.writeUInt32LE(certificate.length, security + 4);
  signed.writeUInt32LE(0x1234abcd, optional + 64); // the checksum a signer recomputes
  return signed;
}

export interface MachOOptions {
  signed: boolean;
  /** 64-bit unless told. */
  bits?: 32 | 64;
  /** Little-endian (every Mac since Intel) unless told. */
  bigEndian?: boolean;
}

const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;

/** A thin Mach-O: a header, a segment command, and LC_CODE_SIGNATURE when signed. */
export function machOFile(options: MachOOptions): Buffer {
  const bits = options.bits ?? 64;
  const headerBytes = bits === 64 ? 32 : 28;
  const commands: [number, number, number[]][] = [[LC_SEGMENT_64, 72, []]];
  if (options.signed) commands.push([LC_CODE_SIGNATURE, 16, [0x200, 0x40]]);
  const sizeofcmds = commands.reduce((sum, [, size]) => sum + size, 0);
  const file = Buffer.alloc(headerBytes + sizeofcmds + 0x240);
  const u32 = (value: number, at: number) => (options.bigEndian ? file.writeUInt32BE(value, at) : file.writeUInt32LE(value, at));
  u32(bits === 64 ? 0xfeedfacf : 0xfeedface, 0);
  u32(bits === 64 ? 0x0100000c : 12, 4); // arm64 or arm
  u32(2, 12); // MH_EXECUTE
  u32(commands.length, 16);
  u32(sizeofcmds, 20);
  let at = headerBytes;
  for (const [cmd, size, fields] of commands) {
    u32(cmd, at);
    u32(size, at + 4);
    fields.forEach((value, i) => u32(value, at + 8 + i * 4));
    at += size;
  }
  return file;
}

/** A universal Mach-O holding `slices` (32-bit fat_arch entries, each slice 4 KiB aligned). */
export function fatMachOFile(slices: Buffer[]): Buffer {
  const align = 4096;
  const header = Buffer.alloc(8 + slices.length * 20);
  header.writeUInt32BE(0xcafebabe, 0);
  header.writeUInt32BE(slices.length, 4);
  const parts: Buffer[] = [header];
  let offset = align;
  slices.forEach((slice, i) => {
    header.writeUInt32BE(0x0100000c, 8 + i * 20);
    header.writeUInt32BE(offset, 8 + i * 20 + 8);
    header.writeUInt32BE(slice.length, 8 + i * 20 + 12);
    header.writeUInt32BE(12, 8 + i * 20 + 16);
    const end = parts.reduce((sum, p) => sum + p.length, 0);
    parts.push(Buffer.alloc(offset - end), slice);
    offset = Math.ceil((offset + slice.length) / align) * align;
  });
  return Buffer.concat(parts);
}
