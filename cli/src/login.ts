import { Command } from 'commander';
import { apiClient } from './api-client.js';
import { checkedUrl, configFile, removeLogin, saveLogin } from './config.js';
import { ApiError, CliError, EXIT } from './errors.js';
import { withJson } from './options.js';
import { renderJson } from './output.js';
import { readSecret } from './secret-input.js';

type Env = Record<string, string | undefined>;

interface Developer {
  email: string;
  plan: string;
}

/** Reminds the user that the environment wins over what login saves. */
function environmentNote(env: Env): string {
  const set = ['LATCHKEY_URL', 'LATCHKEY_API_KEY'].filter((name) => env[name]);
  if (!set.length) return '';
  return `note: ${set.join(' and ')} ${set.length > 1 ? 'are set in this environment and win' : 'is set in this environment and wins'} over the saved login\n`;
}

/** `latchkey login`: checks the key, then saves server and key in the user's config directory. */
export function loginCommand(env: Env, print: (out: string) => void, stderr: NodeJS.WriteStream = process.stderr): Command {
  return withJson(new Command('login').description('Check an API key against a server and save both for the next commands'))
    .option('--url <server>', "the server's address, e.g. https://licenses.example.com (default: LATCHKEY_URL)")
    .option('--api-key <key>', 'the API key (default: read from stdin, or asked for without echo on a terminal)')
    .option('--allow-http', 'send the API key over plain http:// to a server that is not this machine (a private network only); saved with the login')
    .action(async (opts) => {
      const given = opts.url ?? env.LATCHKEY_URL;
      if (!given) throw new CliError('name the server: latchkey login --url https://licenses.example.com', EXIT.USAGE);
      const url = checkedUrl(given);
      const apiKey = opts.apiKey ?? (await readSecret('API key: '));
      if (!apiKey) throw new CliError('no API key given: pass --api-key, pipe it on stdin, or run on a terminal to be asked', EXIT.USAGE);
      const allowHttp = opts.allowHttp === true;
      let developer: Developer;
      try {
        developer = (await apiClient(() => ({ url, apiKey, allowHttp: allowHttp || env.LATCHKEY_ALLOW_HTTP === '1' })).request('GET', '/v1/auth/me')).body as Developer;
      } catch (err) {
        if (err instanceof ApiError && err.exitCode === EXIT.AUTH) {
          throw new CliError(`${url} refused this API key, nothing was saved: use a current key (rotating a key ends the previous one)`, EXIT.AUTH);
        }
        throw err;
      }
      const file = configFile(env);
      saveLogin(file, { url, api_key: apiKey, ...(allowHttp ? { allow_http: true } : {}) });
      stderr.write(environmentNote(env));
      print(opts.json ? renderJson({ url, config_file: file, developer }) : `Signed in to ${url} as ${developer.email} (${developer.plan} plan); saved to ${file}\n`);
    });
}

/** `latchkey logout`: removes the saved login. */
export function logoutCommand(env: Env, print: (out: string) => void, stderr: NodeJS.WriteStream = process.stderr): Command {
  return withJson(new Command('logout').description('Forget the saved server and API key')).action((opts) => {
    const file = configFile(env);
    const removed = removeLogin(file);
    stderr.write(environmentNote(env));
    print(opts.json ? renderJson({ config_file: file, removed }) : removed ? `Signed out: removed ${file}\n` : `Not signed in: there is no ${file}\n`);
  });
}
