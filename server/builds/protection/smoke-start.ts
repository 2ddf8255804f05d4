import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { BuildPlatform, PackageFormat } from '../schemas.js';

/** Long enough for a slow, shared machine to start Node and the engine; the gate itself answers at once. */
const SMOKE_START_TIMEOUT_MS = 30_000;
/** The exit code of a protected app that got no usable license (runtime-sdk/engine/index.ts). */
const UNLICENSED_EXIT_CODE = 2;
/** What the license gate says when it starts without a license (runtime-sdk/engine/license-gate.ts, status-message.ts). */
const GATE_SIGNS = ['License key:', 'This app needs a license key.'];
const MAX_REASON_LENGTH = 300;

/** The platform this server's own Node runs: the only one whose executables it can start. */
const ownPlatform = (): string | null => {
  const os = ({ linux: 'linux', darwin: 'mac', win32: 'win' } as Partial<Record<NodeJS.Platform, string>>)[process.platform];
  return os ? `${os}-${process.arch}` : null;
};

/** How to start a protected package here, or null when this server cannot (another platform, an archive to unpack first). */
function commandFor(file: string, format: PackageFormat, platform: BuildPlatform): string[] | null {
  if (format === 'javascript_bundle') return [process.execPath, file];
  if (format === 'single_executable' && platform === ownPlatform()) return [file];
  return null;
}

/** The line of a crash that says what went wrong (`TypeError: ...`), else the first; never the server's paths. */
function reasonFrom(stderr: string, workDir: string): string | null {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.split(workDir).join('<build>').trim())
    .filter(Boolean);
  const line = lines.find((l) => /^([A-Z]\w*)?Error( \[\w+\])?:/.test(l)) ?? lines[0];
  return line ? line.slice(0, MAX_REASON_LENGTH) : null;
}

/**
 * Starts a protected package as a customer without a license would (no key in the environment,
 * nothing on stdin, an empty home and cache) and expects the license gate: it asks for a key and
 * exits with code 2. The app's own code stays behind the gate and never runs here. Answers null
 * when the gate started (or the package cannot start on this server), else why the build cannot
 * run: a crash while loading, a syntax error, a file of the wrong format.
 */
export async function smokeStart(pkg: { file: string; format: PackageFormat }, platform: BuildPlatform, workDir: string): Promise<string | null> {
  const command = commandFor(pkg.file, pkg.format, platform);
  if (!command) return null;
  const home = path.join(workDir, 'smoke-home');
  await fs.mkdir(home, { recursive: true });
  if (command.length === 1) await fs.chmod(pkg.file, 0o755);
  const child = spawn(command[0]!, command.slice(1), {
    cwd: home,
    // Nothing of the server's environment: no license key, no NODE_OPTIONS, no credentials.
    env: { PATH: '/usr/bin:/bin', HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CACHE_HOME: path.join(home, 'cache'), XDG_CONFIG_HOME: path.join(home, 'config') },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    if (stderr.length < 64 * 1024) stderr += chunk;
  });
  child.stdin.on('error', () => {}); // a package that dies at once closes its stdin first
  child.stdin.end();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, SMOKE_START_TIMEOUT_MS);
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('close', (code, signal) => resolve({ code, signal }));
  }).finally(() => clearTimeout(timer));
  if (exit.code === UNLICENSED_EXIT_CODE && GATE_SIGNS.some((sign) => stderr.includes(sign))) return null;
  const said = reasonFrom(stderr, workDir);
  const how = exit.error
    ? `it cannot be executed (${exit.error.message.split(workDir).join('<build>')})`
    : timedOut
      ? `it did not reach the license gate within ${SMOKE_START_TIMEOUT_MS / 1000} s`
      : exit.signal
        ? `it was ended by ${exit.signal}`
        : `it exited with code ${exit.code} before asking for a license key`;
  return `the protected build does not start: ${how}${said ? `: ${said}` : ''}`;
}
