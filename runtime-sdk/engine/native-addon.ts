/**
 * sodium-native inside a protected executable. A native addon cannot be loaded from inside a single
 * executable, so protection carries the target platform's prebuilt `sodium-native.node` as an asset
 * and bundles sodium-native's JavaScript with its `./binding` pointing here: the addon's bytes are
 * written once into this user's app-data folder (named by their SHA-256, compared byte for byte with
 * the carried ones before every load) and loaded with `process.dlopen`. A launcher archive has the file beside its script.
 * Anything that fails throws; the SDK then keeps its secrets in masked memory and says why.
 */
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, fstatSync, mkdirSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const SODIUM_ASSET = 'sodium-native.node';

/** Where the engine tells the bundled binding to look: set by `runProtectedApp` before the license client starts. */
export const SODIUM_ADDON_KEY = 'latchkey.sodium-addon';

export interface SodiumAddonPlace {
  /** The folder of the protected script (a launcher archive's assets lie beside it). */
  scriptDir: string;
  /** This user's app-data folder for the app: where a single executable's addon is written. */
  dataDir: string;
}

type Sea = { isSea(): boolean; getRawAsset(key: string): ArrayBuffer };

/** The addon's exports, for sodium-native's `./binding` module in a protected build. */
export function loadSodiumAddon(): unknown {
  const place = (globalThis as Record<symbol, SodiumAddonPlace | undefined>)[Symbol.for(SODIUM_ADDON_KEY)];
  if (!place) throw new Error('sodium-native is only carried by protected executables');
  const sea = process.getBuiltinModule?.('node:sea') as Sea | undefined;
  const file = sea?.isSea() ? extracted(Buffer.from(sea.getRawAsset(SODIUM_ASSET)), place.dataDir) : path.join(place.scriptDir, SODIUM_ASSET);
  const module = { exports: {} };
  process.dlopen(module, file);
  return module.exports;
}

/** The addon written under its hash, once; a file there with other bytes is replaced, never loaded. */
function extracted(bytes: Buffer, dataDir: string): string {
  const digest = createHash('sha256').update(bytes).digest('hex');
  const dir = path.join(dataDir, 'native');
  const file = path.join(dir, `sodium-native-${digest.slice(0, 32)}.node`);
  if (!holdsExactly(file, bytes)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, bytes, { mode: 0o500 });
    chmodSync(temporary, 0o500);
    renameSync(temporary, file);
  }
  return file;
}

/** Read through one small buffer: reading the whole ~1 MB file into a fresh one cost more than its compare, at every start. */
const COMPARE_CHUNK_BYTES = 64 * 1024;

/** Whether `file` holds `bytes` and nothing else: compared byte for byte, so no other addon is ever loaded in its place. */
function holdsExactly(file: string, bytes: Buffer): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return false;
  }
  try {
    if (fstatSync(fd).size !== bytes.length) return false;
    const chunk = Buffer.allocUnsafe(COMPARE_CHUNK_BYTES);
    for (let at = 0; at < bytes.length;) {
      const read = readSync(fd, chunk, 0, Math.min(chunk.length, bytes.length - at), at);
      if (read === 0 || !chunk.subarray(0, read).equals(bytes.subarray(at, at + read))) return false;
      at += read;
    }
    return true;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}
