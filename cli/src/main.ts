#!/usr/bin/env node
import fs from 'node:fs';
import { Command, CommanderError } from 'commander';
import { apiClient } from './api-client.js';
import { appsCommand } from './apps.js';
import { buildsCommand } from './builds.js';
import { configFile, resolveSettings } from './config.js';
import { doctorCommand } from './doctor.js';
import { ApiError, CliError, EXIT, EXIT_CODE_HELP } from './errors.js';
import { licensesCommand } from './licenses.js';
import { redemptionCommand } from './redemption.js';
import { loginCommand, logoutCommand } from './login.js';
import { renderJson } from './output.js';
import { pushCommand, updatesCommand } from './updates.js';

/**
 * `latchkey`: the developer CLI. It talks to the API at the server `latchkey login` saved (or
 * LATCHKEY_URL) with the saved API key (or LATCHKEY_API_KEY), prints readable tables, or the API's
 * JSON with `--json`, and exits with a code that says what kind of failure it met.
 */
const print = (out: string) => void process.stdout.write(out);
const api = apiClient(() => resolveSettings(process.env));
const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

let jsonOutput = false;

/** Commands made with `new Command` do not inherit the program's settings: each must throw rather than exit, so the exit code is ours. */
function throwInsteadOfExiting(command: Command): Command {
  command.exitOverride();
  command.commands.forEach(throwInsteadOfExiting);
  return command;
}

const program = new Command('latchkey')
  .description('Latchkey license authority CLI: apps, builds, licenses and update pushes over the API')
  .version(version)
  // `latchkey --version` is the CLI's; `builds upload --version` the build's.
  .enablePositionalOptions()
  .hook('preAction', (_program, action) => void (jsonOutput = action.opts().json === true))
  .addCommand(loginCommand(process.env, print))
  .addCommand(logoutCommand(process.env, print))
  .addCommand(appsCommand(api, print))
  .addCommand(buildsCommand(api, print))
  .addCommand(licensesCommand(api, print))
  .addCommand(redemptionCommand(api, print))
  .addCommand(updatesCommand(api, print))
  .addCommand(pushCommand(api, print).description('Same as `latchkey updates push`'))
  .addCommand(doctorCommand(process.env, print))
  .addHelpText(
    'after',
    () => `
Sign in once with \`latchkey login --url <server>\`; the server and key are saved in
${configFile(process.env)}.
LATCHKEY_URL and LATCHKEY_API_KEY win over the saved ones; LATCHKEY_CONFIG_DIR moves the file.

${EXIT_CODE_HELP}`,
  );

throwInsteadOfExiting(program)
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    if (err instanceof CommanderError) {
      // Commander already printed its message (or the help or version it was asked for).
      process.exitCode = err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
      return;
    }
    if (err instanceof ApiError && jsonOutput && err.body !== undefined) print(renderJson(err.body));
    process.stderr.write(`latchkey: ${err instanceof CliError ? err.message : String(err)}\n`);
    process.exitCode = err instanceof CliError ? err.exitCode : EXIT.FAILED;
  });
