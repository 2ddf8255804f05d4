/**
 * The one seam for what differs between operating systems: where per-user app data lives and how
 * the machine's OS-level identity is read. Tests pass their own platform to run every branch on Linux.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface Platform {
  /** `linux`, `darwin`, `win32`, ... as `process.platform` says. */
  readonly name: NodeJS.Platform;
  readonly arch: string;
  /** The per-user folder where this app's license cache lives. */
  appDataDir(appId: string): string;
  /** The OS installation id (machine-id, IOPlatformUUID, MachineGuid), or undefined when unreadable. */
  machineId(): Promise<string | undefined>;
  /** A CPU model string that is cheap to read (no child process). */
  cpuModel(): string;
}

const VENDOR_DIR = 'Latchkey';

/** Linux keeps the id in a file; reading it directly avoids the child process node-machine-id spawns. */
const LINUX_MACHINE_ID_FILES = ['/etc/machine-id', '/var/lib/dbus/machine-id'];

export function appDataDirFor(name: NodeJS.Platform, env: NodeJS.ProcessEnv, home: string, appId: string): string {
  // One folder name, never a path: no separators, and not `.` or `..`.
  const safeAppId = appId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+$/, '_');
  if (name === 'win32') return path.win32.join(env.LOCALAPPDATA ?? path.win32.join(home, 'AppData', 'Local'), VENDOR_DIR, safeAppId);
  if (name === 'darwin') return path.posix.join(home, 'Library', 'Application Support', VENDOR_DIR, safeAppId);
  return path.posix.join(env.XDG_DATA_HOME || path.posix.join(home, '.local', 'share'), VENDOR_DIR.toLowerCase(), safeAppId);
}

async function readMachineId(name: NodeJS.Platform): Promise<string | undefined> {
  if (name === 'linux') {
    for (const file of LINUX_MACHINE_ID_FILES) {
      const id = await readFile(file, 'utf8').then((text) => text.trim(), () => '');
      if (id) return id;
    }
  }
  try {
    // Spawns a process (reg, ioreg): loaded only where no file holds the id.
    const { default: nodeMachineId } = await import('node-machine-id');
    return (await nodeMachineId.machineId(true)).trim() || undefined;
  } catch {
    return undefined;
  }
}

const OS_LABELS: Partial<Record<NodeJS.Platform, string>> = { win32: 'win', darwin: 'mac', linux: 'linux' };

/** The authority's platform label (`linux-x64`, `mac-arm64`, ...), or undefined for one it does not list. */
export function platformLabel(platform: Pick<Platform, 'name' | 'arch'>): string | undefined {
  const os = OS_LABELS[platform.name];
  return os && (platform.arch === 'x64' || platform.arch === 'arm64') ? `${os}-${platform.arch}` : undefined;
}

export const hostPlatform: Platform = {
  name: process.platform,
  arch: process.arch,
  appDataDir: (appId) => appDataDirFor(process.platform, process.env, os.homedir(), appId),
  machineId: () => readMachineId(process.platform),
  cpuModel: () => os.cpus()[0]?.model.trim() ?? '',
};
