import path from 'node:path';
import { nodeUpdateFs, type UpdateFs } from '../../../runtime-sdk/updates/fs.js';

/** The process "lost power": this and every later operation fails, so nothing can be undone in this run. */
export class CrashError extends Error {
  constructor() {
    super('simulated crash');
  }
}

const errno = (code: string, op: string, file: string) => Object.assign(new Error(`${code}: ${op} '${file}'`), { code });

const inside = (child: string, parent: string) => child.startsWith(parent + path.sep);

/**
 * The real filesystem under a temporary folder, with another OS's rules on top, so the Windows and
 * macOS install strategies run here:
 * - Windows: a running executable can be renamed (it keeps running under its new name) but not
 *   overwritten, replaced or deleted (EBUSY / EPERM); a folder holding one cannot be renamed or
 *   deleted (EPERM / EBUSY).
 * - macOS: a running app's `.app` folder can be renamed; its executable cannot be written (ETXTBSY).
 * - All (`linux` has no rules of its own): transient refusals injected by the test (antivirus), a rename between two `volumes`
 *   fails with EXDEV, and a crash after a given number of operations freezes everything.
 */
export class RulesFs implements UpdateFs {
  /** Every operation that changes or flushes something, in order: `rename a -> b`, ... */
  readonly log: string[] = [];
  private readonly running = new Set<string>();
  private readonly refusals: { op: string; match: (file: string) => boolean; code: string; remaining: number }[] = [];
  private crashAfter: number | undefined;
  private crashed = false;

  constructor(
    readonly os: 'win32' | 'darwin' | 'linux',
    private readonly volumes: string[] = [],
    private readonly real: UpdateFs = nodeUpdateFs,
  ) {}

  /** `file` is a running executable from now on. */
  run(file: string): this {
    this.running.add(file);
    return this;
  }

  isRunning(file: string): boolean {
    return this.running.has(file);
  }

  /** The next `times` calls of `op` whose (first, source) path matches `match` fail with `code`. */
  refuse(op: keyof UpdateFs, match: (file: string) => boolean, code: string, times: number): this {
    this.refusals.push({ op, match, code, remaining: times });
    return this;
  }

  /** After `count` more logged operations succeed, the next one crashes. */
  crashAfterOperations(count: number): this {
    this.crashAfter = this.log.length + count;
    return this;
  }

  get didCrash(): boolean {
    return this.crashed;
  }

  stat = (file: string) => this.guard('stat', file, false, () => this.real.stat(file));
  readdir = (dir: string) => this.guard('readdir', dir, false, () => this.real.readdir(dir));
  readFile = (file: string) => this.guard('readFile', file, false, () => this.real.readFile(file));
  mkdir = (dir: string) => this.guard('mkdir', dir, true, () => this.real.mkdir(dir));
  chmod = (file: string, mode: number) => this.guard('chmod', file, true, () => this.real.chmod(file, mode));
  fsync = (file: string) => this.guard('fsync', file, true, () => this.real.fsync(file));
  link = (existing: string, newName: string) => this.guard('link', existing, true, () => this.real.link(existing, newName), newName);

  writeFile = (file: string, data: string | Uint8Array, mode?: number) =>
    this.guard('writeFile', file, true, () => {
      this.assertWritable(file, 'writeFile');
      return this.real.writeFile(file, data, mode);
    });

  copyFile = (from: string, to: string) => this.copying('copyFile', from, to, () => this.real.copyFile(from, to));
  copyTree = (from: string, to: string) => this.copying('copyTree', from, to, () => this.real.copyTree(from, to));

  rm = (file: string) =>
    this.guard('rm', file, true, async () => {
      if (this.os === 'win32' && this.holdsRunning(file, true)) throw errno('EBUSY', 'rm', file);
      await this.real.rm(file);
    });

  rename = (from: string, to: string) =>
    this.guard(
      'rename',
      from,
      true,
      async () => {
        if (this.os === 'win32' && this.holdsRunning(from, false)) throw errno('EPERM', 'rename', from);
        if (this.os === 'win32' && this.running.has(to)) throw errno('EPERM', 'rename', to);
        if (this.volumeOf(from) !== this.volumeOf(to)) throw errno('EXDEV', 'rename', from);
        await this.real.rename(from, to);
        // A running program keeps running from wherever its file (or folder) now is.
        for (const exe of [...this.running]) {
          if (exe === from || inside(exe, from)) {
            this.running.delete(exe);
            this.running.add(to + exe.slice(from.length));
          }
        }
      },
      to,
    );

  /** A copy to `to`, which must not be a running executable (it cannot be written). */
  private copying(op: 'copyFile' | 'copyTree', from: string, to: string, act: () => Promise<void>): Promise<void> {
    return this.guard(
      op,
      from,
      true,
      () => {
        this.assertWritable(to, op);
        return act();
      },
      to,
    );
  }

  /** Whether `file` is a running executable (`self`) or a folder containing one. */
  private holdsRunning(file: string, self: boolean): boolean {
    return [...this.running].some((exe) => (self && exe === file) || inside(exe, file));
  }

  private assertWritable(file: string, op: string): void {
    if (this.running.has(file)) throw errno(this.os === 'win32' ? 'EBUSY' : 'ETXTBSY', op, file);
  }

  private volumeOf(file: string): string | undefined {
    return this.volumes.find((root) => file === root || inside(file, root));
  }

  private async guard<T>(op: string, file: string, logged: boolean, act: () => Promise<T>, other?: string): Promise<T> {
    if (this.crashed) throw new CrashError();
    const refusal = this.refusals.find((r) => r.op === op && r.remaining > 0 && r.match(file));
    if (refusal) {
      refusal.remaining--;
      throw errno(refusal.code, op, file);
    }
    if (!logged) return act();
    if (this.crashAfter !== undefined && this.log.length >= this.crashAfter) {
      this.crashed = true;
      throw new CrashError();
    }
    const result = await act();
    this.log.push(other === undefined ? `${op} ${file}` : `${op} ${file} -> ${other}`);
    return result;
  }
}
