/**
 * Serves a protected app's own files from memory: reads under `root` (the app's folder as its code
 * sees it, a path that does not exist on disk) are answered from the opened vault, so an app that
 * reads its assets next to its code (`path.join(__dirname, 'cows')`, `new URL('./x', import.meta.url)`)
 * keeps working and nothing decrypted is ever written to disk. Everything else goes to the real fs.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { VaultFiles } from './vault.js';

type Encoding = BufferEncoding | null | undefined;

interface VirtualStats {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  size: number;
  mode: number;
  mtime: Date;
  mtimeMs: number;
}

export function installVirtualFs(root: string, files: VaultFiles): void {
  const started = new Date();
  const directories = new Map<string, Set<string>>([['', new Set()]]);
  for (const name of files.keys()) {
    const parts = name.split('/');
    for (let i = 0; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      if (!directories.has(parent)) directories.set(parent, new Set());
      directories.get(parent)!.add(parts[i]!);
    }
  }

  /** The vault path of `target`, or null when it is not under `root`. */
  function inVault(target: unknown): string | null {
    let file: string;
    if (typeof target === 'string') file = target;
    else if (target instanceof URL && target.protocol === 'file:') file = fileURLToPath(target);
    else return null;
    const relative = path.relative(root, path.resolve(file));
    if (relative.startsWith('..') || path.isAbsolute(relative)) return null;
    return relative.split(path.sep).join('/');
  }

  const missing = (syscall: string, target: unknown) =>
    Object.assign(new Error(`ENOENT: no such file or directory, ${syscall} '${String(target)}'`), { code: 'ENOENT', errno: -2, syscall, path: String(target) });

  function read(name: string, target: unknown, options: unknown): Buffer | string {
    const bytes = files.get(name);
    if (!bytes) throw missing('open', target);
    const encoding: Encoding = typeof options === 'string' ? (options as BufferEncoding) : (options as { encoding?: Encoding } | undefined)?.encoding;
    return encoding ? bytes.toString(encoding) : Buffer.from(bytes);
  }

  function stat(name: string, target: unknown): VirtualStats {
    const file = files.get(name);
    const isDirectory = !file && directories.has(name);
    if (!file && !isDirectory) throw missing('stat', target);
    return {
      isFile: () => !!file,
      isDirectory: () => isDirectory,
      isSymbolicLink: () => false,
      size: file?.length ?? 0,
      mode: isDirectory ? 0o40555 : 0o100444,
      mtime: started,
      mtimeMs: started.getTime(),
    };
  }

  function list(name: string, target: unknown, options: unknown): unknown[] {
    const entries = directories.get(name);
    if (!entries) throw missing('scandir', target);
    const names = [...entries].sort();
    if (!(options as { withFileTypes?: boolean } | undefined)?.withFileTypes) return names;
    return names.map((entry) => {
      const child = name ? `${name}/${entry}` : entry;
      const isFile = files.has(child);
      return { name: entry, parentPath: path.join(root, name), path: path.join(root, name), isFile: () => isFile, isDirectory: () => !isFile, isSymbolicLink: () => false };
    });
  }

  // Each replaced function answers for the vault and hands anything else to the original.
  const sync = <A extends unknown[], R>(original: (...args: A) => R, virtual: (name: string, ...args: A) => R) =>
    ((...args: A) => {
      const name = inVault(args[0]);
      return name === null ? original(...args) : virtual(name, ...args);
    }) as (...args: A) => R;
  const callback = <A extends unknown[]>(original: (...args: A) => void, virtual: (name: string, ...args: A) => unknown) =>
    ((...args: A) => {
      const name = inVault(args[0]);
      if (name === null) return original(...args);
      const done = args[args.length - 1] as (err: unknown, value?: unknown) => void;
      try {
        const value = virtual(name, ...args);
        process.nextTick(done, null, value);
      } catch (err) {
        process.nextTick(done, err);
      }
    }) as (...args: A) => void;
  const promised = <A extends unknown[], R>(original: (...args: A) => Promise<R>, virtual: (name: string, ...args: A) => R) =>
    ((...args: A) => {
      const name = inVault(args[0]);
      if (name === null) return original(...args);
      try {
        return Promise.resolve(virtual(name, ...args));
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }) as (...args: A) => Promise<R>;

  const optionsOf = (args: unknown[]) => (typeof args[1] === 'function' ? undefined : args[1]);
  const readVirtual = (name: string, ...args: unknown[]) => read(name, args[0], optionsOf(args));
  const statVirtual = (name: string, ...args: unknown[]) => stat(name, args[0]);
  const listVirtual = (name: string, ...args: unknown[]) => list(name, args[0], optionsOf(args));
  const accessVirtual = (name: string, ...args: unknown[]) => void stat(name, args[0]);

  const target = fs as unknown as Record<string, unknown>;
  const promises = fs.promises as unknown as Record<string, unknown>;
  type Fn = (...args: unknown[]) => unknown;
  type AsyncFn = (...args: unknown[]) => Promise<unknown>;
  for (const [name, virtual] of [
    ['readFileSync', readVirtual],
    ['statSync', statVirtual],
    ['lstatSync', statVirtual],
    ['readdirSync', listVirtual],
    ['accessSync', accessVirtual],
  ] as const) {
    target[name] = sync(target[name] as Fn, virtual);
  }
  target.existsSync = sync(fs.existsSync as Fn, (name) => files.has(name) || directories.has(name));
  target.realpathSync = sync(fs.realpathSync as Fn, (name, file) => {
    stat(name, file);
    return path.resolve(String(file));
  });
  for (const [name, virtual] of [
    ['readFile', readVirtual],
    ['stat', statVirtual],
    ['lstat', statVirtual],
    ['readdir', listVirtual],
    ['access', accessVirtual],
  ] as const) {
    target[name] = callback(target[name] as Fn, virtual);
    promises[name] = promised(promises[name] as AsyncFn, virtual);
  }
  target.createReadStream = sync(fs.createReadStream as Fn, (name, file) => Readable.from([read(name, file, undefined) as Buffer]));
  // `import { readFileSync } from 'node:fs'` sees the replacements too.
  syncBuiltinESMExports();
}
