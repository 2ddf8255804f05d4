import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError, EXIT, SIGN_IN_HINT } from './errors.js';

type Env = Record<string, string | undefined>;

/** Where a server runs when nothing names one: `npm start`'s address. */
const DEFAULT_URL = 'http://127.0.0.1:8080';

/** What `latchkey login` saves. */
export interface SavedLogin {
  url: string;
  api_key: string;
}

/** The server and key a command uses. */
export interface Settings {
  url: string;
  apiKey: string;
}

/**
 * The user's configuration directory, as each OS expects it: `LATCHKEY_CONFIG_DIR` when set,
 * `%APPDATA%\latchkey` on Windows, `~/Library/Application Support/latchkey` on macOS,
 * `$XDG_CONFIG_HOME/latchkey` (default `~/.config/latchkey`) elsewhere.
 */
export function configDir(env: Env): string {
  if (env.LATCHKEY_CONFIG_DIR) return path.resolve(env.LATCHKEY_CONFIG_DIR);
  const home = os.homedir();
  if (process.platform === 'win32') return path.join(env.APPDATA || path.join(home, 'AppData', 'Roaming'), 'latchkey');
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'latchkey');
  // The XDG spec ignores a relative XDG_CONFIG_HOME.
  const xdg = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(home, '.config');
  return path.join(xdg, 'latchkey');
}

export const configFile = (env: Env) => path.join(configDir(env), 'config.json');

/** The saved login, or undefined when there is none. */
export function readLogin(file: string): SavedLogin | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const saved = JSON.parse(text) as Partial<SavedLogin>;
    if (typeof saved.url === 'string' && typeof saved.api_key === 'string') return { url: saved.url, api_key: saved.api_key };
  } catch {
    // reported below, like a file without the fields
  }
  throw new CliError(`${file} is not a saved login: run \`latchkey login\` again, or delete it`, EXIT.USAGE);
}

/**
 * Saves the login readable by the user alone: directories it creates 0700, the file written 0600
 * under a temporary name and renamed over the old one, so no reader ever sees half a file or a
 * wider mode. An existing directory keeps its mode: LATCHKEY_CONFIG_DIR may name a shared one.
 */
export function saveLogin(file: string, login: SavedLogin): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dir, `.config.${randomBytes(6).toString('hex')}.tmp`);
  try {
    fs.writeFileSync(temporary, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    fs.renameSync(temporary, file);
  } catch (err) {
    fs.rmSync(temporary, { force: true });
    throw new CliError(`cannot save ${file}: ${(err as Error).message}`);
  }
}

/** Forgets the saved login; answers whether there was one. */
export function removeLogin(file: string): boolean {
  if (!fs.existsSync(file)) return false;
  fs.rmSync(file);
  return true;
}

export function checkedUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`${value} is not a URL: give the server's address, such as https://licenses.example.com`, EXIT.USAGE);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`${value}: the server's address starts with https:// or http://`, EXIT.USAGE);
  return value.replace(/\/+$/, '');
}

/** LATCHKEY_URL and LATCHKEY_API_KEY win over the saved login; without a key the user is told how to sign in. */
export function resolveSettings(env: Env): Settings {
  const saved = readLogin(configFile(env));
  const apiKey = env.LATCHKEY_API_KEY || saved?.api_key;
  if (!apiKey) throw new CliError(`not signed in: ${SIGN_IN_HINT}`, EXIT.AUTH);
  return { url: serverUrl(env, saved), apiKey };
}

/** The server's address: LATCHKEY_URL, else the saved login's, else the default; no key needed. */
export function serverUrl(env: Env, saved = readLogin(configFile(env))): string {
  return checkedUrl(env.LATCHKEY_URL || saved?.url || DEFAULT_URL);
}
