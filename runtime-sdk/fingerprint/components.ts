/**
 * Raw hardware identifiers, read locally with bounded time. Nothing here leaves the process: the
 * values only feed the salted hash in `canonical.ts`.
 */
import { importOptional, type OptionalModule } from '../optional-module.js';
import type { Platform } from '../platform.js';
import { linuxProbes, readsHardwareFiles } from './linux-probes.js';

type SystemInformation = typeof import('systeminformation');

/**
 * How the probes get systeminformation. By default it is imported where the app carries it (see
 * optional-module.ts: a bundle that leaves it out still builds); the engine of a protected build
 * passes a plain import instead, so protection bundles it.
 */
export type SystemInformationLoader = () => Promise<OptionalModule<SystemInformation>>;

let optionalSystemInformation: Promise<OptionalModule<SystemInformation>> | undefined;
/** Loaded on the first probe, once: a warm start (remembered fingerprint) never pays for it. */
export const importSystemInformation: SystemInformationLoader = () => (optionalSystemInformation ??= importOptional<SystemInformation>('systeminformation'));

/** Closed list of what a fingerprint may be built from. */
export const COMPONENT_NAMES = ['system.uuid', 'system.serial', 'board.serial', 'disk.serial', 'cpu', 'os.machine_id', 'net.primary_mac'] as const;
export type ComponentName = (typeof COMPONENT_NAMES)[number];
export type Components = Partial<Record<ComponentName, string>>;
/** The salted hash of each component (64 lower-case hex), as the authority stores them. */
export type ComponentHashes = Partial<Record<ComponentName, string>>;

/** One source of components; a probe that fails or overruns its time contributes nothing. */
export type Probe = () => Promise<Components>;

/** Identifiers of the hardware itself: when any is present the network card is left out (it comes and goes). */
export const HARDWARE_COMPONENTS: readonly ComponentName[] = ['system.uuid', 'system.serial', 'board.serial', 'disk.serial'];

const EMPTY_MAC = /^(00[:-]?){5}00$/;

const machineIdProbe =
  (platform: Platform): Probe =>
  async () => ({ 'os.machine_id': await platform.machineId() });

/**
 * The probes for this machine: on Linux x86 the files the kernel exposes (linux-probes.ts, no child
 * process); elsewhere systeminformation's hardware identifiers and the OS machine id, or the machine
 * id alone (with `onDegraded` told why) where systeminformation cannot be loaded.
 */
export async function hardwareProbes(platform: Platform, load: SystemInformationLoader, onDegraded: (reason: string) => void): Promise<Probe[]> {
  if (readsHardwareFiles(platform)) return linuxProbes(platform);
  const loaded = await load();
  if (!loaded.module) {
    onDegraded(loaded.reason);
    return [machineIdProbe(platform)];
  }
  return systemInformationProbes(platform, loaded.module);
}

function systemInformationProbes(platform: Platform, si: SystemInformation): Probe[] {
  return [
    async () => {
      const system = await si.system();
      return { 'system.uuid': system.uuid, 'system.serial': system.serial };
    },
    async () => ({ 'board.serial': (await si.baseboard()).serial }),
    async () => {
      const cpu = await si.cpu();
      return { cpu: [cpu.manufacturer, cpu.brand, cpu.family, cpu.model, cpu.stepping].join('|') };
    },
    async () => {
      // The first fixed disk only: USB sticks and added drives must not change the device.
      const fixed = (await si.diskLayout()).filter((disk) => !/usb/i.test(disk.interfaceType) && disk.serialNum.trim()).sort((a, b) => a.device.localeCompare(b.device));
      return { 'disk.serial': fixed[0]?.serialNum };
    },
    async () => {
      // Lowest-named physical interface rather than the default route's, which changes with Wi-Fi.
      const physical = (await si.networkInterfaces())
        .filter((nic) => !nic.internal && !nic.virtual && nic.mac && !EMPTY_MAC.test(nic.mac))
        .sort((a, b) => a.iface.localeCompare(b.iface));
      return { 'net.primary_mac': physical[0]?.mac };
    },
    machineIdProbe(platform),
  ];
}

export interface ComponentReading {
  components: Components;
  /** False when a probe failed or ran out of time: the hash may differ from this machine's usual one. */
  complete: boolean;
}

/**
 * Readings per source of probes (the app's `fingerprintProbes`, or the systeminformation loader):
 * the hardware is read once per process, whichever client, activation or refresh asks, and callers
 * arriving together share the one reading. An incomplete reading is dropped once it is answered, so
 * a probe that overran its time gets another chance.
 */
const readings = new WeakMap<object, Promise<ComponentReading>>();

export function readComponentsOnce(source: object, probes: () => Promise<Probe[]>, timeoutMs: number): Promise<ComponentReading> {
  let reading = readings.get(source);
  if (!reading) {
    reading = probes().then((list) => readComponents(list, timeoutMs));
    readings.set(source, reading);
    reading.then(
      (done) => !done.complete && readings.delete(source),
      () => readings.delete(source),
    );
  }
  return reading;
}

/**
 * Runs the probes in parallel; each gets `timeoutMs`, so a hung WMI or a slow disk cannot stall
 * start-up: what a probe has not answered by then is missing from the reading (`complete` false).
 */
export async function readComponents(probes: Probe[], timeoutMs: number): Promise<ComponentReading> {
  const results = await Promise.all(probes.map((probe) => withDeadline(probe(), timeoutMs)));
  const components: Components = {};
  for (const result of results) Object.assign(components, result ?? {});
  return { components, complete: results.every((r) => r !== undefined) };
}

async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms).unref();
  });
  try {
    return await Promise.race([work.catch(() => undefined), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
