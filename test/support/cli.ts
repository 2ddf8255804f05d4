import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The compiled command, as `npm install` ships it: plain `node`, no TypeScript loader (`npm run build -w cli` makes it). */
const BIN = path.resolve('cli/dist/main.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to the command's stdin, which is then closed (it is closed at once without). */
  input?: string;
}

/**
 * Runs the real `latchkey` executable against a server as a developer would; never throws, returns
 * the exit code. Its environment is PATH and the LATCHKEY_ variables only, with a config directory
 * of its own (empty) unless `env` names one, so no saved login of the machine's user is read.
 * `LATCHKEY_URL: ''` or `LATCHKEY_API_KEY: ''` leave the saved login in force.
 */
export async function runLatchkey(serverUrl: string, apiKey: string, args: string[], env: Record<string, string> = {}, options: RunOptions = {}): Promise<CliRun> {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build -w cli\` first`);
  // `LATCHKEY_CONFIG_DIR: ''` in `env` leaves the OS default (from HOME and XDG_CONFIG_HOME) in force.
  const configDir = 'LATCHKEY_CONFIG_DIR' in env ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-config-'));
  try {
    return await new Promise<CliRun>((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN, ...args],
        { env: { PATH: process.env.PATH, LATCHKEY_URL: serverUrl, LATCHKEY_API_KEY: apiKey, ...(configDir ? { LATCHKEY_CONFIG_DIR: configDir } : {}), ...env } },
        (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin!.end(options.input ?? '');
    });
  } finally {
    if (configDir) fs.rmSync(configDir, { recursive: true, force: true });
  }
}
