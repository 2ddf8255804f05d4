/**
 * The macOS Keychain and Windows DPAPI key stores cannot run on this machine, so their tools are
 * stand-in programs (the SDK runs them exactly as it runs the real ones: file, argument list, stdin,
 * environment) that accept only the real tools' command lines and record every run. What they prove:
 * the command lines and the stdin/stdout protocol are the ones the real tools take, no secret is ever
 * on a command line (`ps` shows those to every user), and a failing tool leaves the cache on the
 * install binding. findOsKeyStore's tool paths are an internal parameter only tests pass; the SDK
 * always uses /usr/bin/security and %SystemRoot%\System32\WindowsPowerShell\v1.0\powershell.exe, the
 * latter only where DPAPI cannot be called in the process (koffi absent: windows-dpapi.test.ts runs
 * that way under wine64). Here, off Windows, koffi finds no crypt32.dll and the PowerShell way is taken.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { resolveBinding } from '../../runtime-sdk/token-store/cache-binding.js';
import { loadDpapiCalls } from '../../runtime-sdk/token-store/dpapi-in-process.js';
import { findOsKeyStore, type OsKeyStoreTools } from '../../runtime-sdk/token-store/os-key-store.js';
import { tempDir } from './support/fake-machine.js';

const SERVICE = 'latchkey-license-cache';
const APP = 'app_5f0c2e9b6a1d3c4e5f607182';

/** One run of a stand-in: its arguments, its stdin and the variable DPAPI input travels in. */
interface ToolRun {
  argv: string[];
  stdin: string;
  dpapiInput: string | null;
}

/**
 * `security(1)` as its manual gives it, for the commands the SDK may use:
 *   security find-generic-password -s service -a account -w   (prints the password only; 44 when not found)
 *   security -i   ("Run security in interactive mode": commands from stdin until EOF), here
 *     add-generic-password -U -s service -a account -w password   (-U: update the item if it exists)
 * Anything else exits 2. `refuse` in its folder makes every command fail (a locked keychain, a denied prompt).
 */
const SECURITY_STAND_IN = `
const [args, stdin, state] = [process.argv.slice(2), require('node:fs').readFileSync(0, 'utf8'), process.env.STAND_IN_STATE];
const fs = require('node:fs'), path = require('node:path');
fs.appendFileSync(path.join(state, 'runs.jsonl'), JSON.stringify({ argv: args, stdin, dpapiInput: process.env.LATCHKEY_DPAPI_INPUT ?? null }) + '\\n');
const refuse = fs.existsSync(path.join(state, 'refuse'));
const item = (s, a) => path.join(state, 'item-' + Buffer.from(s + '\\0' + a).toString('hex'));
if (args.length === 6 && args[0] === 'find-generic-password' && args[1] === '-s' && args[3] === '-a' && args[5] === '-w') {
  if (refuse || !fs.existsSync(item(args[2], args[4]))) { process.stderr.write('security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\\n'); process.exit(44); }
  process.stdout.write(fs.readFileSync(item(args[2], args[4]), 'utf8') + '\\n');
} else if (args.length === 1 && args[0] === '-i') {
  for (const line of stdin.split('\\n').filter(Boolean)) {
    const words = line.split(' ');
    const ok = words.length === 8 && words[0] === 'add-generic-password' && words[1] === '-U' && words[2] === '-s' && words[4] === '-a' && words[6] === '-w';
    if (!ok) { process.stderr.write('unknown command\\n'); continue; }
    if (!refuse) fs.writeFileSync(item(words[3], words[5]), words[7]);
  }
} else process.exit(2);
`;

/**
 * Windows PowerShell 5.1: \`powershell.exe -NoProfile -NonInteractive -Command <script>\`, the script
 * being the SDK's call of [Security.Cryptography.ProtectedData]::Protect or ::Unprotect(userData,
 * optionalEntropy = $null, DataProtectionScope 'CurrentUser') on the base64 in $env:LATCHKEY_DPAPI_INPUT,
 * printing the base64 result (Windows ends the line with CRLF). The stand-in's "protection" is a reversible scramble, not DPAPI; any other command line exits 1.
 */
const POWERSHELL_STAND_IN = `
const [args, state] = [process.argv.slice(2), process.env.STAND_IN_STATE];
const fs = require('node:fs'), path = require('node:path');
const stdin = fs.readFileSync(0, 'utf8');
fs.appendFileSync(path.join(state, 'runs.jsonl'), JSON.stringify({ argv: args, stdin, dpapiInput: process.env.LATCHKEY_DPAPI_INPUT ?? null }) + '\\n');
const script = (method) => "Add-Type -AssemblyName System.Security; [Convert]::ToBase64String([Security.Cryptography.ProtectedData]::" + method + "([Convert]::FromBase64String($env:LATCHKEY_DPAPI_INPUT), $null, 'CurrentUser'))";
if (args.length !== 4 || args[0] !== '-NoProfile' || args[1] !== '-NonInteractive' || args[2] !== '-Command' || fs.existsSync(path.join(state, 'refuse'))) process.exit(1);
const input = Buffer.from(process.env.LATCHKEY_DPAPI_INPUT ?? '', 'base64');
const flip = (bytes) => bytes.map((b) => b ^ 0x5a);
if (args[3] === script('Protect')) process.stdout.write(Buffer.concat([Buffer.from('dpapi-stand-in:'), flip(input)]).toString('base64') + '\\r\\n');
else if (args[3] === script('Unprotect') && input.subarray(0, 15).toString() === 'dpapi-stand-in:') process.stdout.write(flip(input.subarray(15)).toString('base64') + '\\r\\n');
else { process.stderr.write('Exception calling "Unprotect": The data is invalid.\\n'); process.exit(1); }
`;

let state: string;
let tools: OsKeyStoreTools;
let env: NodeJS.ProcessEnv;

function standIn(name: string, source: string): string {
  const file = path.join(state, name);
  fs.writeFileSync(file, `#!${process.execPath}\n${source}`, { mode: 0o700 });
  return file;
}

const runs = (): ToolRun[] =>
  fs.existsSync(path.join(state, 'runs.jsonl'))
    ? fs
        .readFileSync(path.join(state, 'runs.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as ToolRun)
    : [];

beforeEach(() => {
  state = tempDir('latchkey-os-tools-');
  tools = { security: standIn('security', SECURITY_STAND_IN), powershell: () => standIn('powershell.exe', POWERSHELL_STAND_IN), dpapiCalls: loadDpapiCalls };
  env = { ...process.env, STAND_IN_STATE: state };
});

describe('macOS Keychain through security(1)', () => {
  it('stores the secret through interactive mode on stdin, never on the command line, and reads it back with find-generic-password -w', async () => {
    const store = (await findOsKeyStore('darwin', env, APP, tempDir(), tools))!;
    expect(store.name).toBe('keychain');
    expect(await store.load()).toBeUndefined();
    const secret = (await store.create())!;
    expect(secret).toHaveLength(32);
    expect((await store.load())?.equals(secret)).toBe(true);

    const find = ['find-generic-password', '-s', SERVICE, '-a', APP, '-w'];
    expect(runs().map((r) => r.argv)).toEqual([find, ['-i'], find, find]);
    expect(runs()[1]!.stdin).toBe(`add-generic-password -U -s ${SERVICE} -a ${APP} -w ${secret.toString('base64')}\n`);
    for (const run of runs()) expect(run.argv.join(' ')).not.toContain(secret.toString('base64'));
  });

  it('a keychain that refuses leaves the cache on the install binding; an app id the command line would split is not stored', async () => {
    fs.writeFileSync(path.join(state, 'refuse'), '');
    const store = (await findOsKeyStore('darwin', env, APP, tempDir(), tools))!;
    expect(await store.create()).toBeUndefined();
    expect((await resolveBinding(null, store)).record).toMatchObject({ kind: 'install' });

    fs.rmSync(path.join(state, 'refuse'));
    const before = runs().length;
    expect(await (await findOsKeyStore('darwin', env, 'app with spaces', tempDir(), tools))!.create()).toBeUndefined();
    expect(runs()).toHaveLength(before);
  });

  it('without the tool there is no store', async () => {
    expect(await findOsKeyStore('darwin', env, APP, tempDir(), { ...tools, security: path.join(state, 'missing') })).toBeUndefined();
  });
});

describe('Windows DPAPI through PowerShell', () => {
  it('is the way where DPAPI cannot be called in the process: koffi loads here but finds no crypt32.dll', async () => {
    expect(await import('koffi')).toBeTruthy();
    expect(await loadDpapiCalls()).toBeUndefined();
  });

  it('protects the secret with the input in the child environment, keeps the blob beside the cache, and unprotects it at the next start', async () => {
    const cacheDir = tempDir();
    const store = (await findOsKeyStore('win32', env, APP, cacheDir, tools))!;
    expect(store.name).toBe('dpapi');
    // No blob yet: nothing to unprotect, and PowerShell is not started.
    expect(await store.load()).toBeUndefined();
    expect(runs()).toEqual([]);

    const secret = (await store.create())!;
    expect(secret).toHaveLength(32);
    const blobFile = path.join(cacheDir, 'license.key');
    expect(fs.statSync(blobFile).mode & 0o777).toBe(0o600);
    const blob = fs.readFileSync(blobFile, 'utf8');
    expect(blob).not.toContain(secret.toString('base64'));
    expect((await store.load())?.equals(secret)).toBe(true);

    const [protect, unprotect] = runs();
    expect(protect!.argv.slice(0, 3)).toEqual(['-NoProfile', '-NonInteractive', '-Command']);
    expect(protect!.argv[3]).toContain('[Security.Cryptography.ProtectedData]::Protect(');
    expect(protect!.dpapiInput).toBe(secret.toString('base64'));
    expect(unprotect!.argv[3]).toContain('[Security.Cryptography.ProtectedData]::Unprotect(');
    expect(unprotect!.dpapiInput).toBe(blob);
    for (const run of runs()) expect(run.argv.join(' ')).not.toContain(secret.toString('base64'));
  });

  it('a PowerShell that fails leaves no blob and the install binding; a blob that does not unprotect reads as no secret', async () => {
    const cacheDir = tempDir();
    fs.writeFileSync(path.join(state, 'refuse'), '');
    const store = (await findOsKeyStore('win32', env, APP, cacheDir, tools))!;
    expect(await store.create()).toBeUndefined();
    expect(fs.existsSync(path.join(cacheDir, 'license.key'))).toBe(false);
    expect((await resolveBinding(null, store)).record).toMatchObject({ kind: 'install' });

    fs.rmSync(path.join(state, 'refuse'));
    fs.writeFileSync(path.join(cacheDir, 'license.key'), Buffer.from('another user’s blob').toString('base64'));
    expect(await store.load()).toBeUndefined();
  });

  it('a folder the blob cannot be written to is a store that refused: no error reaches the app, no file is left', async () => {
    const parent = tempDir();
    const notAFolder = path.join(parent, 'cache');
    fs.writeFileSync(notAFolder, '');
    const store = (await findOsKeyStore('win32', env, APP, notAFolder, tools))!;
    expect(await store.create()).toBeUndefined();
    expect(fs.readdirSync(parent)).toEqual(['cache']);
  });
});
