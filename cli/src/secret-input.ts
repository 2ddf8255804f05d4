import { CliError, EXIT } from './errors.js';

/**
 * A secret the user did not put on the command line (where other users' `ps` can see it): asked
 * on the terminal without echo, or read whole from stdin when it is piped (`... | latchkey login`).
 */
export async function readSecret(question: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string> {
  const value = input.isTTY ? await askHidden(question, input, output) : await readAll(input);
  return value.trim();
}

async function readAll(input: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a line in raw mode, echoing nothing; Backspace edits, Ctrl-C and Ctrl-D give up. */
function askHidden(question: string, input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (cancelled: boolean) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      output.write('\n');
      if (cancelled) reject(new CliError('cancelled', EXIT.FAILED));
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish(false);
        if (ch === '\u0003' || ch === '\u0004') return finish(true);
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    output.write(question);
    input.setRawMode(true);
    input.setEncoding('utf8');
    input.on('data', onData);
    input.resume();
  });
}
