/**
 * The OS installation id: /etc/machine-id on Linux, IOPlatformUUID on macOS, the registry's
 * MachineGuid on Windows, the SMBIOS UUID or host UUID on FreeBSD. Read the same way, and
 * normalised the same way (lower case, no white space), as the node-machine-id package the SDK
 * used before, so fingerprints made by earlier versions still match.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** Linux keeps the id in a file: read directly, no child process. */
const LINUX_MACHINE_ID_FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id'];
const COMMAND_TIMEOUT_MS = 5_000;

export async function readMachineId(platform: NodeJS.Platform, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (platform === 'linux') {
    for (const file of LINUX_MACHINE_ID_FILES) {
      const id = await readFile(file, 'utf8').then(
        (text) => text.trim(),
        () => '',
      );
      if (id) return id.toLowerCase();
    }
    return undefined;
  }
  if (platform === 'darwin') return machineIdFromIoreg(await run('ioreg', ['-rd1', '-c', 'IOPlatformExpertDevice']));
  if (platform === 'win32') {
    return machineIdFromRegQuery(await run(windowsRegExe(env), ['QUERY', 'HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography', '/v', 'MachineGuid']));
  }
  if (platform === 'freebsd') return clean((await run('kenv', ['-q', 'smbios.system.uuid'])) ?? (await run('sysctl', ['-n', 'kern.hostuuid'])));
  return undefined;
}

/** `"IOPlatformUUID" = "8A1B..."` in `ioreg -rd1 -c IOPlatformExpertDevice`. */
export function machineIdFromIoreg(out: string | undefined): string | undefined {
  return clean(out?.split('IOPlatformUUID')[1]?.split('\n')[0]?.replace(/[="]/g, ''));
}

/** `MachineGuid    REG_SZ    1c2d...` in `REG QUERY ... /v MachineGuid`. */
export function machineIdFromRegQuery(out: string | undefined): string | undefined {
  return clean(out?.split('REG_SZ')[1]);
}

/** A 32-bit process on 64-bit Windows must go through `sysnative` to read the 64-bit registry view. */
function windowsRegExe(env: NodeJS.ProcessEnv): string {
  const windir = env.windir ?? env.SystemRoot ?? 'C:\\Windows';
  const wow64 = process.arch === 'ia32' && env.PROCESSOR_ARCHITEW6432 !== undefined;
  return path.win32.join(windir, wow64 ? 'sysnative' : 'System32', 'REG.exe');
}

function clean(value: string | undefined): string | undefined {
  return value?.replace(/\s+/g, '').toLowerCase() || undefined;
}

/** Standard output of a short command, or undefined when it fails: the id is then simply unknown. */
function run(file: string, args: string[]): Promise<string | undefined> {
  // child_process loads on first use: a start that reads the id from a file never pays for it.
  const { execFile } = process.getBuiltinModule('node:child_process');
  return new Promise((resolve) => {
    execFile(file, args, { timeout: COMMAND_TIMEOUT_MS, windowsHide: true }, (err, stdout) => resolve(err ? undefined : stdout));
  });
}
