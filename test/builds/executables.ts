/**
 * Reads what a delivered executable is from its bytes, as the operating system's loader would:
 * ELF, PE and Mach-O headers, and whether Node's single-executable blob was injected where each
 * format keeps it (an ELF note, a PE resource, a Mach-O section) with the fuse flipped.
 */
import { SEA_FUSE, SEA_RESOURCE } from '../../native/sea/single-executable.js';

export interface ExecutableFacts {
  format: 'elf' | 'pe' | 'macho' | 'unknown';
  /** x86-64 or aarch64, by the header's machine field. */
  machine: 'x64' | 'arm64' | 'other';
  /** The NODE_SEA_BLOB resource, found where the format keeps resources, and its size. */
  seaBlobBytes: number | null;
  /** `NODE_SEA_FUSE_…:1`: Node starts the injected script instead of behaving as `node`. */
  fuseFlipped: boolean;
  /** ELF only: the blob's bytes (what protection added to the runtime). */
  seaBlob?: Buffer;
  /** Mach-O only: an LC_CODE_SIGNATURE load command. */
  codeSignature?: boolean;
}

export function inspectExecutable(bytes: Buffer): ExecutableFacts {
  const fuseFlipped = bytes.includes(`${SEA_FUSE}:1`) && !bytes.includes(`${SEA_FUSE}:0`);
  if (bytes.readUInt32BE(0) === 0x7f454c46) return { format: 'elf', ...elf(bytes), fuseFlipped };
  if (bytes.toString('latin1', 0, 2) === 'MZ') return { format: 'pe', ...pe(bytes), fuseFlipped };
  if (bytes.readUInt32LE(0) === 0xfeedfacf) return { format: 'macho', ...macho(bytes), fuseFlipped };
  return { format: 'unknown', machine: 'other', seaBlobBytes: null, fuseFlipped };
}

/** 64-bit little-endian ELF: e_machine, then the notes of every PT_NOTE segment. */
function elf(b: Buffer): Pick<ExecutableFacts, 'machine' | 'seaBlobBytes' | 'seaBlob'> {
  const machine = ({ 0x3e: 'x64', 0xb7: 'arm64' } as const)[b.readUInt16LE(18) as 0x3e | 0xb7] ?? 'other';
  const phoff = Number(b.readBigUInt64LE(32));
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  let seaBlob: Buffer | undefined;
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (b.readUInt32LE(ph) !== 4) continue; // PT_NOTE
    const offset = Number(b.readBigUInt64LE(ph + 8));
    const end = offset + Number(b.readBigUInt64LE(ph + 32));
    for (let at = offset; at + 12 <= end;) {
      const namesz = b.readUInt32LE(at);
      const descsz = b.readUInt32LE(at + 4);
      const name = b.toString('latin1', at + 12, at + 12 + namesz).replace(/\0+$/, '');
      const desc = at + 12 + align(namesz, 4);
      if (name === SEA_RESOURCE) seaBlob = b.subarray(desc, desc + descsz);
      at += 12 + align(namesz, 4) + align(descsz, 4);
    }
  }
  return { machine, seaBlobBytes: seaBlob?.length ?? null, seaBlob };
}

/** PE32+: the COFF machine, then the resource directory: RT_RCDATA (10) holding an entry named NODE_SEA_BLOB. */
function pe(b: Buffer): Pick<ExecutableFacts, 'machine' | 'seaBlobBytes'> {
  const peAt = b.readUInt32LE(0x3c);
  if (b.toString('latin1', peAt, peAt + 4) !== 'PE\0\0') return { machine: 'other', seaBlobBytes: null };
  const coff = peAt + 4;
  const machine = ({ 0x8664: 'x64', 0xaa64: 'arm64' } as const)[b.readUInt16LE(coff) as 0x8664 | 0xaa64] ?? 'other';
  const sections = b.readUInt16LE(coff + 2);
  const optional = coff + 20;
  const resourceRva = b.readUInt32LE(optional + 112 + 2 * 8); // data directory 2: resources (PE32+)
  const sectionTable = optional + b.readUInt16LE(coff + 16);
  let rsrc: { rva: number; raw: number } | null = null;
  for (let i = 0; i < sections; i++) {
    const s = sectionTable + i * 40;
    const rva = b.readUInt32LE(s + 12);
    const size = Math.max(b.readUInt32LE(s + 8), b.readUInt32LE(s + 16));
    if (resourceRva >= rva && resourceRva < rva + size) rsrc = { rva, raw: b.readUInt32LE(s + 20) };
  }
  if (!rsrc) return { machine, seaBlobBytes: null };
  const { rva, raw } = rsrc;
  const root = raw + (resourceRva - rva);
  const entries = (dir: number) => {
    const count = b.readUInt16LE(dir + 12) + b.readUInt16LE(dir + 14);
    return Array.from({ length: count }, (_, i) => ({ id: b.readUInt32LE(dir + 16 + i * 8), to: b.readUInt32LE(dir + 20 + i * 8) }));
  };
  const nameOf = (id: number) => {
    if (!(id & 0x80000000)) return null;
    const at = root + (id & 0x7fffffff);
    return b.toString('utf16le', at + 2, at + 2 + 2 * b.readUInt16LE(at));
  };
  const rcdata = entries(root).find((e) => e.id === 10);
  if (!rcdata) return { machine, seaBlobBytes: null };
  const named = entries(root + (rcdata.to & 0x7fffffff)).find((e) => nameOf(e.id) === SEA_RESOURCE);
  if (!named) return { machine, seaBlobBytes: null };
  // Name -> language -> data entry { rva, size }.
  let node = named.to;
  while (node & 0x80000000) node = entries(root + (node & 0x7fffffff))[0]!.to;
  return { machine, seaBlobBytes: b.readUInt32LE(root + node + 4) };
}

/** 64-bit Mach-O: cputype, then the load commands (a NODE_SEA segment, LC_CODE_SIGNATURE). */
function macho(b: Buffer): Pick<ExecutableFacts, 'machine' | 'seaBlobBytes' | 'codeSignature'> {
  const machine = ({ 0x01000007: 'x64', 0x0100000c: 'arm64' } as const)[b.readUInt32LE(4) as 0x01000007 | 0x0100000c] ?? 'other';
  let seaBlobBytes: number | null = null;
  let codeSignature = false;
  for (let i = 0, at = 32; i < b.readUInt32LE(16); i++) {
    const cmd = b.readUInt32LE(at);
    if (cmd === 0x1d) codeSignature = true;
    if (cmd === 0x19 && b.toString('latin1', at + 8, at + 24).replace(/\0+$/, '') === 'NODE_SEA') seaBlobBytes = Number(b.readBigUInt64LE(at + 48));
    at += b.readUInt32LE(at + 4);
  }
  return { machine, seaBlobBytes, codeSignature };
}

const align = (n: number, to: number) => Math.ceil(n / to) * to;
