/**
 * Other programs the updater runs: the OS's dialog tools (osascript, PowerShell, zenity, kdialog)
 * and archive tools (ditto, tar). Always a file and an argument list, never a shell line, so text
 * from a manifest cannot become a command; tests replace the seam and check the exact argv.
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';

export interface CommandResult {
  /** Null when the program was ended by a signal. */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CommandRunner {
  /** Runs `file` with `args` to completion. Rejects only when it cannot be started. */
  run(file: string, args: readonly string[], options?: { env?: NodeJS.ProcessEnv }): Promise<CommandResult>;
  /** The full path of an executable named `name` on PATH, or undefined. */
  find(name: string): Promise<string | undefined>;
}

/** Dialog output is a button name; archive tools print file lists. Bounded either way. */
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

export function systemCommands(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): CommandRunner {
  return {
    run: (file, args, options = {}) =>
      new Promise((resolve, reject) => {
        // child_process loads on first use: most starts run no dialog or archive tool.
        const { execFile } = process.getBuiltinModule('node:child_process');
        execFile(file, [...args], { env: options.env ?? env, maxBuffer: MAX_OUTPUT_BYTES, windowsHide: true }, (err, stdout, stderr) => {
          const code = (err as NodeJS.ErrnoException | null)?.code;
          // A string code (ENOENT, EACCES) is a program that did not start; a number is its exit code.
          if (typeof code === 'string') return reject(err);
          resolve({ code: err ? (typeof code === 'number' ? code : null) : 0, stdout, stderr });
        });
      }),
    async find(name) {
      const extensions = platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
      for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
        for (const extension of extensions) {
          const candidate = path.join(dir, name + extension);
          if (
            await access(candidate, constants.X_OK).then(
              () => true,
              () => false,
            )
          )
            return candidate;
        }
      }
      return undefined;
    },
  };
}

/** A program of Windows itself, by full path, so that neither the current folder nor PATH can stand in for it. */
export function windowsSystemProgram(env: NodeJS.ProcessEnv, relative: string): string {
  return `${env.SystemRoot ?? env.windir ?? 'C:\\Windows'}\\System32\\${relative}`;
}

export const WINDOWS_POWERSHELL = 'WindowsPowerShell\\v1.0\\powershell.exe';
