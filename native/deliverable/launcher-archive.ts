/**
 * A macOS deliverable that starts without a new signature: a `.tar.gz` holding the vendor-signed
 * Node runtime unmodified, the app's script beside it, and a launcher. Injecting a blob into a
 * Mach-O invalidates Node's signature, and an arm64 Mac refuses to start an unsigned or badly
 * signed binary; re-signing needs Apple's `codesign`, which this server does not have.
 *
 *   <name>/bin/<name>         a POSIX shell launcher: execs the runtime on the script with "$@"
 *   <name>/runtime/node       the runtime, byte for byte as published (its signature intact)
 *   <name>/app/main.cjs       the script, and its assets beside it
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { create } from 'tar';

export interface LauncherArchiveJob {
  /** A self-contained CommonJS script. */
  script: string;
  /** Files placed beside the script (`app/<name>`), read from `path.join(__dirname, name)`. */
  assets?: Record<string, string>;
  /** The runtime binary, copied as it is. */
  nodeBinary: string;
  /** The command: the archive's top folder and the launcher's name (`[a-z0-9._-]`). */
  name: string;
  /** Where the `.tar.gz` is written. */
  output: string;
  workDir: string;
}

/** The launcher: follows symlinks to itself (a link in /usr/local/bin works), then runs the bundled Node on the script. */
export function launcherScript(): string {
  return `#!/bin/sh
# Starts the app with the Node runtime shipped beside it; no Node needs to be installed.
self="$0"
while [ -L "$self" ]; do
  link="$(readlink "$self")"
  case "$link" in
    /*) self="$link" ;;
    *) self="$(dirname "$self")/$link" ;;
  esac
done
root="$(cd "$(dirname "$self")/.." && pwd -P)"
exec "$root/runtime/node" "$root/app/main.cjs" "$@"
`;
}

export async function buildLauncherArchive(job: LauncherArchiveJob): Promise<void> {
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(job.name)) throw new Error(`"${job.name}" is not a command name`);
  const staging = await fs.mkdtemp(path.join(job.workDir, 'archive-'));
  const top = path.join(staging, job.name);
  await fs.mkdir(path.join(top, 'bin'), { recursive: true });
  await fs.mkdir(path.join(top, 'runtime'));
  await fs.mkdir(path.join(top, 'app'));
  await fs.writeFile(path.join(top, 'bin', job.name), launcherScript(), { mode: 0o755 });
  await fs.copyFile(job.nodeBinary, path.join(top, 'runtime', 'node'));
  await fs.chmod(path.join(top, 'runtime', 'node'), 0o755);
  await fs.copyFile(job.script, path.join(top, 'app', 'main.cjs'));
  for (const [name, file] of Object.entries(job.assets ?? {})) {
    const target = path.join(top, 'app', name);
    if (path.relative(path.join(top, 'app'), target).startsWith('..') || name === 'main.cjs') throw new Error(`asset name "${name}" is not a path inside app/`);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.copyFile(file, target);
  }
  // Modes kept (the launcher and runtime stay executable); owners and device numbers left out.
  await create({ gzip: true, file: job.output, cwd: staging, portable: true }, [job.name]);
  await fs.rm(staging, { recursive: true, force: true });
}
