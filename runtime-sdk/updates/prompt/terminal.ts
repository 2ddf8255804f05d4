/**
 * The question at the terminal, for a command-line app or a desktop without a dialog tool: asked on
 * the user's terminal itself (`/dev/tty`, the console on Windows), never on the app's stdin and
 * stdout, which may be a pipe or a file the app reads and writes: the answer is never taken out of
 * the app's input, and the question never lands in its output. A process without a terminal (a GUI
 * app started from the desktop, a service, cron) is not asked.
 */
import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import { BUTTON_LABELS, dialogTitle, headline, type PromptChoice, type UpdateOffer } from './offer.js';

export interface TerminalIo {
  input: NodeJS.ReadableStream;
  write(text: string): void;
  /** Gives the terminal back once answered. */
  close(): void;
}

/** Where the user's terminal is opened: the process's controlling terminal, or the Windows console. */
const TERMINAL_DEVICES: Record<'posix' | 'win32', { input: string; output: string }> = {
  posix: { input: '/dev/tty', output: '/dev/tty' },
  win32: { input: '\\\\.\\CONIN$', output: '\\\\.\\CONOUT$' },
};

/** The user's terminal, or undefined when this process has none. */
export function openTerminal(os: NodeJS.Platform): TerminalIo | undefined {
  const devices = TERMINAL_DEVICES[os === 'win32' ? 'win32' : 'posix'];
  let input: number;
  let output: number;
  try {
    input = openSync(devices.input, 'r');
  } catch {
    return undefined;
  }
  try {
    output = openSync(devices.output, 'w');
  } catch {
    closeSync(input);
    return undefined;
  }
  // tty and readline load when there is a question to ask, not with the SDK at every start.
  const { isatty, ReadStream } = process.getBuiltinModule('node:tty');
  const stream = isatty(input) ? new ReadStream(input) : createReadStream('', { fd: input });
  return {
    input: stream,
    write: (text) => void writeSync(output, text),
    close() {
      // Destroying the stream closes its descriptor.
      stream.destroy();
      closeSync(output);
    },
  };
}

/**
 * Control characters would be obeyed by the terminal (clear the screen, rewrite the question), not
 * shown: each is written as its escape, like `\x1b`. Line breaks and tabs stay.
 */
function forTerminal(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point: they are escaped.
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

const ANSWERS: Record<string, PromptChoice> = { i: 'install', install: 'install', s: 'skip', skip: 'skip' };

export async function askAtTerminal(offer: UpdateOffer, io: TerminalIo): Promise<PromptChoice> {
  const notes = offer.releaseNotes ? `\n${forTerminal(offer.releaseNotes)}\n` : '';
  io.write(`\n${forTerminal(dialogTitle(offer))}\n${forTerminal(headline(offer))}\n${notes}\n`);
  io.write(`${BUTTON_LABELS.install} [i], ${BUTTON_LABELS.later.toLowerCase()} [n], ${BUTTON_LABELS.skip.toLowerCase()} [s]? `);
  const lines = process.getBuiltinModule('node:readline').createInterface({ input: io.input, terminal: false });
  try {
    for await (const line of lines) return ANSWERS[line.trim().toLowerCase()] ?? 'later';
    // End of input: nobody answered.
    return 'later';
  } finally {
    lines.close();
    io.close();
  }
}
