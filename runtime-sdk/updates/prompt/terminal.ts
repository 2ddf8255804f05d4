/**
 * The question at the terminal, for a command-line app or a desktop without a dialog tool: on
 * stderr (stdout is the app's), one line read from stdin. Only asked where a person can answer.
 */
import { createInterface } from 'node:readline';
import { BUTTON_LABELS, dialogTitle, headline, type PromptChoice, type UpdateOffer } from './offer.js';

export interface TerminalIo {
  input: NodeJS.ReadableStream;
  write(text: string): void;
}

export const processTerminal: TerminalIo = {
  // Read when asked: touching process.stdin creates its stream, which an app that never asks should not pay for.
  get input() {
    return process.stdin;
  },
  write: (text) => void process.stderr.write(text),
};

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
  const lines = createInterface({ input: io.input, terminal: false });
  try {
    for await (const line of lines) return ANSWERS[line.trim().toLowerCase()] ?? 'later';
    // End of input: nobody answered.
    return 'later';
  } finally {
    // Hands stdin back to the app.
    lines.close();
  }
}
