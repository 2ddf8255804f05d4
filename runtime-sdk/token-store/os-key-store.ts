/**
 * A 32-byte secret per app and user kept by the operating system's own store, which the cache keys
 * are bound to where there is one: the Secret Service on Linux (through `secret-tool`, when a desktop
 * session bus runs), the login Keychain on macOS (`/usr/bin/security`), DPAPI on Windows (called in
 * this process through koffi where the app carries it, else through PowerShell; the protected blob in a
 * file beside the cache). A copied cache then opens only for this user on this
 * machine, and reading it takes the OS store's consent, not just the user's files. Where none is
 * present (servers, containers, CI) the cache is bound to the fingerprint and the install instead.
 *
 * The tools are run as programs (file and argument list, never a shell line) with a bounded time,
 * and no secret is ever on a command line (which `ps` shows every user): stdin, or the child's environment.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadDpapiCalls, type DpapiCalls } from './dpapi-in-process.js';

export type OsKeyStoreName = 'secret-service' | 'keychain' | 'dpapi';

export interface OsKeyStore {
  readonly name: OsKeyStoreName;
  /** The secret stored for this app, or undefined when there is none (or the store did not answer). */
  load(): Promise<Buffer | undefined>;
  /** Makes, stores and returns a new secret; undefined when the store refused it. */
  create(): Promise<Buffer | undefined>;
}

const SECRET_BYTES = 32;
const SERVICE = 'latchkey-license-cache';
const TOOL_TIMEOUT_MS = 5_000;
const SECURITY = '/usr/bin/security';
/** Windows PowerShell 5.1, which every supported Windows has and which loads System.Security's ProtectedData. */
const POWERSHELL = 'WindowsPowerShell\\v1.0\\powershell.exe';

/**
 * Where the macOS and Windows tools are. Fixed absolute paths, never looked up on PATH: a program
 * planted earlier on PATH must not be handed the secret. Only tests replace them (stand-ins speaking
 * the real tools' command lines, os-key-store-tools.test.ts); the SDK never passes them.
 */
export interface OsKeyStoreTools {
  security: string;
  powershell: (env: NodeJS.ProcessEnv) => string;
  /** DPAPI in this process (dpapi-in-process.ts); undefined where it cannot be called, and PowerShell is used. */
  dpapiCalls: () => Promise<DpapiCalls | undefined>;
}

const SYSTEM_TOOLS: OsKeyStoreTools = {
  security: SECURITY,
  powershell: (env) => `${env.SystemRoot ?? env.windir ?? 'C:\\Windows'}\\System32\\${POWERSHELL}`,
  dpapiCalls: loadDpapiCalls,
};

/** The store this machine has for `appId`, or undefined where there is none. */
export async function findOsKeyStore(
  platform: NodeJS.Platform,
  env: NodeJS.ProcessEnv,
  appId: string,
  cacheDir: string,
  tools: OsKeyStoreTools = SYSTEM_TOOLS,
): Promise<OsKeyStore | undefined> {
  if (platform === 'linux') {
    // Without a session bus there is no Secret Service to talk to (servers, containers, ssh sessions).
    const secretTool = env.DBUS_SESSION_BUS_ADDRESS ? await onPath('secret-tool', env) : undefined;
    return secretTool ? secretService(secretTool, env, appId) : undefined;
  }
  if (platform === 'darwin') return (await isExecutable(tools.security)) ? keychain(tools.security, env, appId) : undefined;
  if (platform === 'win32') {
    const file = path.join(cacheDir, 'license.key');
    const calls = await tools.dpapiCalls();
    if (calls) return dpapi(inProcess(calls), file);
    const powershell = tools.powershell(env);
    return (await isExecutable(powershell)) ? dpapi(throughPowerShell(powershell, env), file) : undefined;
  }
  return undefined;
}

function secretService(secretTool: string, env: NodeJS.ProcessEnv, appId: string): OsKeyStore {
  const attributes = ['service', SERVICE, 'app', appId];
  return {
    name: 'secret-service',
    load: async () => decodeSecret((await runTool(secretTool, ['lookup', ...attributes], env))?.trim()),
    async create() {
      const secret = randomBytes(SECRET_BYTES);
      // The secret goes in on stdin, never on the command line.
      const stored = await runTool(secretTool, ['store', `--label=Latchkey license cache (${appId})`, ...attributes], env, secret.toString('base64'));
      return stored === undefined ? undefined : secret;
    },
  };
}

/** An account name an interactive `security` command line carries as one word (app ids are `app_<hex>`). */
const KEYCHAIN_ACCOUNT = /^[A-Za-z0-9_.@:-]{1,128}$/;

/**
 * The login Keychain through `security(1)`. Reading: `security find-generic-password -s <service>
 * -a <account> -w` prints the password alone. Storing: `security add-generic-password -U -s <service>
 * -a <account> -w <password>` would put the secret on the command line, where `ps` shows it; so it
 * runs as `security -i` ("Run security in interactive mode ... type commands on stdin until an EOF"),
 * the same command read from stdin. Interactive mode's exit status does not report the command's, so
 * the secret is read back: it was stored only if it reads back the same.
 */
function keychain(security: string, env: NodeJS.ProcessEnv, appId: string): OsKeyStore {
  const load = async () => decodeSecret((await runTool(security, ['find-generic-password', '-s', SERVICE, '-a', appId, '-w'], env))?.trim());
  return {
    name: 'keychain',
    load,
    async create() {
      // An id the interactive line would split or unquote stays on the install binding.
      if (!KEYCHAIN_ACCOUNT.test(appId)) return undefined;
      const secret = randomBytes(SECRET_BYTES);
      await runTool(security, ['-i'], env, `add-generic-password -U -s ${SERVICE} -a ${appId} -w ${secret.toString('base64')}\n`);
      const stored = await load();
      return stored?.equals(secret) ? secret : undefined;
    },
  };
}

/** DPAPI's two operations on base64 text: the protected blob of a secret, and the secret of a blob; undefined when refused. */
interface DpapiProtector {
  protect(secret: string): Promise<string | undefined>;
  unprotect(blob: string): Promise<string | undefined>;
}

/** In this process (dpapi-in-process.ts): about a millisecond. */
function inProcess(calls: DpapiCalls): DpapiProtector {
  const transform = async (call: (input: Uint8Array) => Promise<Buffer | undefined>, input: string) => {
    const bytes = Buffer.from(input, 'base64');
    const output = await call(bytes).finally(() => bytes.fill(0));
    const text = output?.toString('base64');
    output?.fill(0);
    return text;
  };
  return { protect: (secret) => transform(calls.protect, secret), unprotect: (blob) => transform(calls.unprotect, blob) };
}

/**
 * `powershell.exe -NoProfile -NonInteractive -Command <script>` runs ProtectedData.Protect or
 * .Unprotect (System.Security) on the base64 input in `LATCHKEY_DPAPI_INPUT` (the child's own
 * environment, which other users cannot read, unlike the command line) and prints the base64 result.
 * One PowerShell start each (docs/design.md, OS key store, says what it costs).
 */
function throughPowerShell(powershell: string, env: NodeJS.ProcessEnv): DpapiProtector {
  const script = (method: 'Protect' | 'Unprotect') =>
    `Add-Type -AssemblyName System.Security; [Convert]::ToBase64String([Security.Cryptography.ProtectedData]::${method}([Convert]::FromBase64String($env:LATCHKEY_DPAPI_INPUT), $null, 'CurrentUser'))`;
  const run = async (method: 'Protect' | 'Unprotect', input: string) =>
    (await runTool(powershell, ['-NoProfile', '-NonInteractive', '-Command', script(method)], { ...env, LATCHKEY_DPAPI_INPUT: input }))?.trim();
  return { protect: (secret) => run('Protect', secret), unprotect: (blob) => run('Unprotect', blob) };
}

/**
 * DPAPI (CurrentUser): the blob only this Windows user on this machine can unprotect, as base64 text
 * in a file beside the cache. Each start unprotects it once.
 */
function dpapi(protector: DpapiProtector, file: string): OsKeyStore {
  return {
    name: 'dpapi',
    async load() {
      const blob = await readFile(file, 'utf8').catch(() => undefined);
      return blob ? decodeSecret(await protector.unprotect(blob.trim())) : undefined;
    },
    async create() {
      const secret = randomBytes(SECRET_BYTES);
      const blob = await protector.protect(secret.toString('base64'));
      if (!blob) return undefined;
      // Whole or not at all (a crash mid-write leaves the old file or none); a folder or disk that refuses is a store that refused.
      const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
        await writeFile(temp, blob, { mode: 0o600 });
        await rename(temp, file);
        return secret;
      } catch {
        await rm(temp, { force: true }).catch(() => {});
        return undefined;
      }
    },
  };
}

function decodeSecret(text: string | undefined): Buffer | undefined {
  const secret = text ? Buffer.from(text, 'base64') : undefined;
  return secret?.length === SECRET_BYTES ? secret : undefined;
}

/** Standard output of a tool that exited 0, else undefined: a missing or refusing store is simply absent. */
function runTool(file: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<string | undefined> {
  // child_process loads on first use: where there is no OS store, no start pays for it.
  const { execFile } = process.getBuiltinModule('node:child_process');
  return new Promise((resolve) => {
    const child = execFile(file, args, { env, timeout: TOOL_TIMEOUT_MS, windowsHide: true }, (err, stdout) => resolve(err ? undefined : stdout));
    child.stdin?.on('error', () => {});
    child.stdin?.end(input);
  });
}

async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file: string): Promise<boolean> {
  return access(file, constants.X_OK).then(
    () => true,
    () => false,
  );
}
