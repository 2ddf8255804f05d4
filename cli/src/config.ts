import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CliError, EXIT, SIGN_IN_HINT } from './errors.js';
import { writePrivateFile } from './private-file.js';

type Env = Record<string, string | undefined>;

/** Where a server runs when nothing names one: `npm start`'s address. */
const DEFAULT_URL = 'http://127.0.0.1:8080';

/** What `latchkey login` saves. */
export interface SavedLogin {
  url: string;
  api_key: string;
  /** The user said, at login, that plain http to this server is fine (`--allow-http`: a private network). */
  allow_http?: boolean;
}

/** The server and key a command uses. */
export interface Settings {
  url: string;
  apiKey: string;
  /** Plain http to a host that is not this machine is allowed: LATCHKEY_ALLOW_HTTP=1, or the saved login's choice for its server. */
  allowHttp: boolean;
}

/** This machine: 127.0.0.0/8, ::1 or localhost. */
export function isLoopback(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return net.isIPv4(host) && host.startsWith('127.');
}

/**
 * A secret (the API key, the operator token) goes over plain http only to this machine, or where the
 * user said the network is private (`how` names the way to say so): anyone on the path reads it.
 */
export function assertSecretTransport(url: string, allowHttp: boolean, secret: string, how: string): void {
  if (new URL(url).protocol !== 'http:' || allowHttp || isLoopback(url)) return;
  throw new CliError(
    `refusing to send ${secret} over plain http:// to ${new URL(url).host}: use the server's https:// address, or, if the network between here and the server is private, ${how}`,
    EXIT.USAGE,
  );
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
    if (typeof saved.url === 'string' && typeof saved.api_key === 'string') return { url: saved.url, api_key: saved.api_key, allow_http: saved.allow_http === true };
  } catch {
    // reported below, like a file without the fields
  }
  throw new CliError(`${file} is not a saved login: run \`latchkey login\` again, or delete it`, EXIT.USAGE);
}

/**
 * Saves the login readable by the user alone: directories it creates 0700, the file as
 * writePrivateFile writes it. An existing directory keeps its mode: LATCHKEY_CONFIG_DIR may name a
 * shared one.
 */
export function saveLogin(file: string, login: SavedLogin): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writePrivateFile(file, `${JSON.stringify(login, null, 2)}\n`);
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
  const url = serverUrl(env, saved);
  // The saved choice holds for the saved server only: LATCHKEY_URL naming another one does not inherit it.
  const allowHttp = env.LATCHKEY_ALLOW_HTTP === '1' || (saved?.allow_http === true && checkedUrl(saved.url) === url);
  return { url, apiKey, allowHttp };
}

/** The server's address: LATCHKEY_URL, else the saved login's, else the default; no key needed. */
export function serverUrl(env: Env, saved = readLogin(configFile(env))): string {
  return checkedUrl(env.LATCHKEY_URL || saved?.url || DEFAULT_URL);
}
