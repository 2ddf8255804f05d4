import { gzipSync } from 'node:zlib';
import yazl from 'yazl';

export type Entries = Record<string, string | Buffer>;

/**
 * A zip of `entries`. yazl refuses dangerous names, as it should; `rename` swaps an entry's name
 * afterwards (same length, in both headers) to make the hostile archives scanning must refuse.
 */
export async function zipOf(entries: Entries, options: { rename?: Record<string, string>; mode?: Record<string, number> } = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(entries)) {
    zip.addBuffer(Buffer.from(content), name, { mode: options.mode?.[name] ?? 0o100644 });
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  let bytes = Buffer.concat(chunks);
  for (const [from, to] of Object.entries(options.rename ?? {})) {
    if (from.length !== to.length) throw new Error('rename keeps the length');
    bytes = Buffer.from(bytes.toString('latin1').split(from).join(to), 'latin1');
  }
  return bytes;
}

interface TarEntry {
  name: string;
  content?: string | Buffer;
  /** ustar type flag: '0' file, '5' directory, '2' symbolic link. */
  type?: '0' | '2' | '5';
  linkTarget?: string;
}

/** A tar.gz written by hand: any name, any entry type, which tools that create archives refuse to. */
export function tarGzOf(entries: (TarEntry | [string, string | Buffer])[]): Buffer {
  const blocks: Buffer[] = [];
  for (const item of entries) {
    const e: TarEntry = Array.isArray(item) ? { name: item[0], content: item[1] } : item;
    const data = Buffer.from(e.content ?? '');
    const header = Buffer.alloc(512);
    const field = (offset: number, length: number, value: string) => header.write(value, offset, length, 'utf8');
    const octal = (offset: number, length: number, value: number) => field(offset, length, value.toString(8).padStart(length - 1, '0') + '\0');
    field(0, 100, e.name);
    octal(100, 8, e.type === '5' ? 0o755 : 0o644);
    octal(108, 8, 0);
    octal(116, 8, 0);
    octal(124, 12, data.length);
    octal(136, 12, 1_700_000_000);
    field(148, 8, '        ');
    field(156, 1, e.type ?? '0');
    field(157, 100, e.linkTarget ?? '');
    field(257, 6, 'ustar\0');
    field(263, 2, '00');
    let sum = 0;
    for (const byte of header) sum += byte;
    field(148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
    blocks.push(header, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
