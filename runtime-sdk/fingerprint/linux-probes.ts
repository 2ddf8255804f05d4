/**
 * The hardware components on Linux (x64, ia32), read from the files the kernel exposes, with no
 * child process: systeminformation spawned dmidecode, lscpu, lsblk and a shell per network card,
 * which cost a cold start hundreds of milliseconds (seconds on a busy machine). Each reader gives
 * the value systeminformation gave for the same machine, so installations activated with it keep
 * their fingerprint: its sources are the same files (dmidecode and the DMI files show the same
 * SMBIOS strings, lscpu prints /proc/cpuinfo's fields on x86, lsblk takes a serial from udev or sysfs).
 *
 * The files are read synchronously: they are the kernel's (sysfs, procfs) or udev's (tmpfs), made
 * in memory when read, so a read cannot wait on a disk, and a few dozen synchronous reads take less
 * than a millisecond where the same reads through the thread pool took several on a first start.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import type { Platform } from '../platform.js';
import type { Probe } from './components.js';

const DMI = '/sys/class/dmi/id';

/** Linux on x86: where every component has a file to read (other architectures keep systeminformation's lscpu). */
export function readsHardwareFiles(platform: Pick<Platform, 'name' | 'arch'>): boolean {
  return platform.name === 'linux' && (platform.arch === 'x64' || platform.arch === 'ia32');
}

export function linuxProbes(platform: Platform): Probe[] {
  return [
    async () => {
      const [uuid, serial] = [readText(`${DMI}/product_uuid`), readText(`${DMI}/product_serial`)];
      return { 'system.uuid': firmwareString(uuid)?.toLowerCase(), 'system.serial': firmwareString(serial) };
    },
    async () => ({ 'board.serial': firmwareString(readText(`${DMI}/board_serial`)) }),
    async () => ({ cpu: cpuFromCpuinfo(readText('/proc/cpuinfo') ?? '') }),
    async () => ({ 'disk.serial': firstFixedDiskSerial(blockDisks()) }),
    async () => ({ 'net.primary_mac': primaryMac(os.networkInterfaces()) }),
    async () => ({ 'os.machine_id': await platform.machineId() }),
  ];
}

/** A DMI string, or undefined where firmware left a filler systeminformation discarded (`Default string`, `To be filled by O.E.M.`). */
export function firmwareString(raw: string | undefined): string | undefined {
  const value = raw?.trim();
  const lower = value?.toLowerCase();
  if (!value || lower === 'default' || lower!.includes('o.e.m.') || lower!.includes('default string')) return undefined;
  return value;
}

/**
 * `manufacturer|brand|family|model|stepping` of the first processor, as systeminformation built it
 * from lscpu: the brand is the model name up to `@`, trademarks as symbols, `CPU` dropped, less its
 * first word, which names the manufacturer.
 */
export function cpuFromCpuinfo(cpuinfo: string): string | undefined {
  // The first processor's block: the file repeats it for every core (thousands of lines on a big machine).
  const end = cpuinfo.search(/\n\s*\n/);
  const first = (end < 0 ? cpuinfo : cpuinfo.slice(0, end)).split('\n');
  const field = (name: string) =>
    first
      .find((line) => line.split(':')[0]!.trim().toLowerCase() === name)
      ?.split(':')
      .slice(1)
      .join(':')
      .trim() ?? '';
  let brand = field('model name')
    .replace(/To Be Filled By O.E.M./g, '')
    .split('@')[0]!
    .trim();
  if (brand.includes('Unknown')) brand = brand.split('Unknown')[0]!.trim();
  if (!brand) return undefined;
  brand = brand
    .replace(/\(R\)+/g, '®')
    .replace(/\(TM\)+/g, '™')
    .replace(/\(C\)+/g, '©')
    .replace(/CPU+/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  const words = brand.split(' ');
  return [manufacturerOf(brand), words.slice(1).join(' '), field('cpu family'), field('model'), field('stepping')].join('|');
}

/** systeminformation's names for x86 vendors (the last match wins, as there). */
const MANUFACTURERS: [string, string][] = [
  ['intel', 'Intel'],
  ['amd', 'AMD'],
  ['qemu', 'QEMU'],
  ['hygon', 'Hygon'],
  ['centaur', 'WinChip/Via'],
  ['vmware', 'VMware'],
  ['tcg', 'QEMU'],
  ['apple', 'Apple'],
];

function manufacturerOf(brand: string): string {
  const lower = brand.toLowerCase();
  return MANUFACTURERS.reduce((found, [needle, name]) => (lower.includes(needle) ? name : found), brand);
}

export interface BlockDisk {
  /** `/dev/sda`, `/dev/nvme0n1`. */
  device: string;
  serial: string;
  usb: boolean;
}

/** The first fixed disk with a serial, by device name: USB sticks and added drives must not change the device. */
export function firstFixedDiskSerial(disks: BlockDisk[]): string | undefined {
  return disks
    .filter((disk) => !disk.usb && disk.serial.trim())
    .sort((a, b) => a.device.localeCompare(b.device))[0]
    ?.serial.trim();
}

/**
 * Whole disks as systeminformation listed them from lsblk: backed by a device (not loop, zram or
 * device-mapper), with a size and a model (a virtio disk has none), and the serial lsblk shows:
 * udev's ID_SERIAL_SHORT (SATA, SCSI), else the device's own (NVMe).
 */
function blockDisks(): BlockDisk[] {
  const disks: BlockDisk[] = [];
  for (const name of attempt(() => readdirSync('/sys/block')) ?? []) {
    const dir = `/sys/block/${name}`;
    // Empty devices (unused loop devices) go before the costlier look at what backs them.
    if (!(Number(readText(`${dir}/size`)) > 0)) continue;
    const where = attempt(() => realpathSync.native(`${dir}/device`));
    if (!where) continue;
    const node = readText(`${dir}/dev`);
    const udev = node ? readText(`/run/udev/data/b${node}`) : undefined;
    const model = udev?.match(/^E:ID_MODEL=(.*)$/m)?.[1] ?? readText(`${dir}/device/model`);
    if (!model) continue;
    const serial = udev?.match(/^E:ID_SERIAL_SHORT=(.*)$/m)?.[1] ?? readText(`${dir}/device/serial`) ?? '';
    disks.push({ device: `/dev/${name}`, serial, usb: where.includes('/usb') });
  }
  return disks;
}

/** MAC prefixes of hypervisors' virtual cards (and the empty MAC), as systeminformation lists them. */
const VIRTUAL_MAC_PREFIXES = [
  '00:00:00:00:00:00',
  '00:03:FF',
  '00:05:69',
  '00:0C:29',
  '00:0F:4B',
  '00:13:07',
  '00:13:BE',
  '00:15:5D',
  '00:16:3E',
  '00:1C:42',
  '00:21:F6',
  '00:24:0B',
  '00:50:56',
  '00:A0:B1',
  '00:E0:C8',
  '08:00:27',
  '0A:00:27',
  '18:92:2C',
  '16:DF:49',
  '3C:F3:92',
  '54:52:00',
  'FC:15:97',
];

function isVirtualNic(name: string, mac: string): boolean {
  const upper = mac.toUpperCase();
  const lower = name.toLowerCase();
  return (
    VIRTUAL_MAC_PREFIXES.some((prefix) => upper.startsWith(prefix)) ||
    lower.includes(' virtual ') ||
    lower.includes('vethernet ') ||
    lower.startsWith('veth') ||
    lower.startsWith('vboxnet')
  );
}

/** The lowest-named physical interface's MAC, rather than the default route's, which changes with Wi-Fi. */
export function primaryMac(interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]>): string | undefined {
  const physical = Object.entries(interfaces)
    .map(([name, addresses]) => ({ name, mac: addresses?.at(-1)?.mac ?? '', internal: addresses?.[0]?.internal ?? false }))
    .filter((nic) => !nic.internal && nic.mac && !isVirtualNic(nic.name, nic.mac) && !nic.name.toLowerCase().includes('loopback'))
    .sort((a, b) => a.name.localeCompare(b.name));
  return physical[0]?.mac;
}

/** A file's text, or undefined when it cannot be read (absent, root-only as the DMI serials are). */
function readText(file: string): string | undefined {
  // Absent files are usual (no DMI tables in a VM, no udev record): asked first, as a thrown error costs more than a read.
  return existsSync(file) ? attempt(() => readFileSync(file, 'utf8').trim()) : undefined;
}

/** What `read` returns, or undefined when it throws (a file absent or not readable). */
function attempt<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
