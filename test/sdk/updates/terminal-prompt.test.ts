/**
 * The update question at a terminal is asked on the terminal itself (/dev/tty), never on the app's
 * stdin: a real process under a real pseudo-terminal (util-linux `script`) with its stdin
 * redirected from a file answers from the terminal, and the app then reads its stdin whole.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/fake-machine.js';
import { REPO_ROOT } from '../support/self-update-world.js';

const APP = path.join(REPO_ROOT, 'test/sdk/support/terminal-prompt-app.ts');
const APP_STDIN = 'i\nthe data the app reads\n';
const hasScript = spawnSync('script', ['--version']).status === 0;
const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

let work: string;
let stdinFile: string;
beforeAll(() => {
  work = tempDir('latchkey-tty-');
  stdinFile = path.join(work, 'stdin.txt');
  fs.writeFileSync(stdinFile, APP_STDIN);
});
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

/** The JSON line the app printed last. */
const answerIn = (output: string) => JSON.parse(output.trim().split(/\r?\n/).at(-1)!) as { choice: string; stdin: string };

describe('the update question at a terminal', () => {
  it.skipIf(!hasScript)('is answered on the terminal, and the app reads its own stdin whole', async () => {
    const command = `${quoted(process.execPath)} --import tsx ${quoted(APP)} < ${quoted(stdinFile)}`;
    const terminal = spawn('script', ['-qec', command, '/dev/null'], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    let typed = false;
    terminal.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      // The user types at the question, on the terminal: `s` for Skip this version.
      if (!typed && output.includes('skip this version [s]? ')) {
        typed = true;
        terminal.stdin.write('s\n');
      }
    });
    const code = await new Promise<number | null>((resolve) => terminal.once('close', resolve));
    expect(code).toBe(0);
    expect(output).toContain('Notes 2.0.0 is available. You have 1.0.0.');
    expect(answerIn(output)).toEqual({ choice: 'skip', stdin: APP_STDIN });
  });

  it('without a terminal (a new session, as a desktop or a service starts an app): Not right now, stdin untouched', async () => {
    const stdin = fs.openSync(stdinFile, 'r');
    const app = spawn(process.execPath, ['--import', 'tsx', APP], { cwd: REPO_ROOT, detached: true, stdio: [stdin, 'pipe', 'pipe'] });
    fs.closeSync(stdin);
    let output = '';
    app.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    app.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    expect(await new Promise<number | null>((resolve) => app.once('close', resolve))).toBe(0);
    expect(answerIn(output)).toEqual({ choice: 'later', stdin: APP_STDIN });
  });
});
