import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BIN = path.resolve('server/cli/bin.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `latchkey` executable against a server as a developer would; never throws, returns the exit code. */
export async function runLatchkey(serverUrl: string, apiKey: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, LATCHKEY_URL: serverUrl, LATCHKEY_API_KEY: apiKey, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
