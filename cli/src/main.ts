import { Command, CommanderError } from 'commander';
import { apiClientFromEnv, CliError } from './api-client.js';
import { buildsCommand } from './builds.js';
import { licensesCommand } from './licenses.js';
import { updatesCommand } from './updates.js';

/**
 * `latchkey`: the developer CLI. It talks to the API at LATCHKEY_URL with the API key in
 * LATCHKEY_API_KEY, prints readable tables, or the API's JSON with `--json`.
 */
const print = (out: string) => void process.stdout.write(out);
const api = apiClientFromEnv(process.env);

const program = new Command('latchkey')
  .description('Latchkey license authority CLI (reads LATCHKEY_URL and LATCHKEY_API_KEY)')
  .exitOverride()
  .addCommand(licensesCommand(api, print))
  .addCommand(buildsCommand(api, print))
  .addCommand(updatesCommand(api, print));

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    // Commander already printed its message (or the help/version it was asked for).
    process.exitCode = err.exitCode;
    return;
  }
  process.stderr.write(`latchkey: ${err instanceof CliError ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
