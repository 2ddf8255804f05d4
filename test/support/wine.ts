import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** wine64 from Debian's package (not on PATH there), or on PATH; undefined where it is not installed. */
export const wine64 = ['/usr/lib/wine/wine64', ...(process.env.PATH ?? '').split(':').map((d) => path.join(d, 'wine64'))].find((f) => fs.existsSync(f));

/**
 * The environment of a new wine prefix in `dir` that says Windows 10: a new prefix says Windows 7, on
 * which Node 22 refuses to start, and customers run Windows 10 or later.
 */
export async function winePrefix(dir: string, home: string): Promise<Record<string, string>> {
  const env = { PATH: process.env.PATH ?? '', HOME: home, WINEPREFIX: fs.mkdtempSync(path.join(dir, 'wine-')), WINEDEBUG: '-all' };
  await run(wine64!, ['winecfg', '-v', 'win10'], { env, timeout: 240_000 });
  return env;
}

/** Runs under wine64 with files for its standard streams (in `dir`): Node under wine cannot open the socket pairs a pipe would be. */
export async function underWine(exe: string, env: Record<string, string>, args: string[], dir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const out = path.join(dir, `out-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(`${out}.in`, '');
  const stdio = [fs.openSync(`${out}.in`, 'r'), fs.openSync(`${out}.out`, 'w'), fs.openSync(`${out}.err`, 'w')];
  const child = spawn(wine64!, [exe, ...args], { env, stdio });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  for (const fd of stdio) fs.closeSync(fd);
  return { code, stdout: fs.readFileSync(`${out}.out`, 'utf8'), stderr: fs.readFileSync(`${out}.err`, 'utf8') };
}

/** A Unix path as a Windows program under wine sees it (drive Z: is the root). */
export const windowsPath = (unixPath: string) => `Z:${unixPath.replaceAll('/', '\\')}`;
