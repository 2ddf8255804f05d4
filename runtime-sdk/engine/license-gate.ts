/**
 * The license gate a protected app passes before its own code runs: the cached license when it is
 * usable; else the authority (a lifted revocation, renewed grace); else a license key, from
 * LATCHKEY_LICENSE_KEY or typed at the terminal. Talks to the user on stderr: stdout is the app's.
 */
import { createLicenseClient, type LicenseClient } from '../license-client.js';
import { LicenseError } from '../errors.js';
import type { LicenseClientOptions } from '../options.js';
import { statusMessage } from '../status-message.js';

const MAX_KEY_ATTEMPTS = 3;

export interface GateIo {
  env: NodeJS.ProcessEnv;
  input: NodeJS.ReadableStream;
  say(line: string): void;
  ask(prompt: string): void;
}

export const processIo: GateIo = {
  env: process.env,
  input: process.stdin,
  say: (line) => void process.stderr.write(`${line}\n`),
  ask: (prompt) => void process.stderr.write(prompt),
};

/** Keys to try: the one in the environment, else lines typed (or piped) on stdin. */
async function* licenseKeys(io: GateIo): AsyncGenerator<string> {
  const fromEnv = io.env.LATCHKEY_LICENSE_KEY?.trim();
  if (fromEnv) {
    yield fromEnv;
    return;
  }
  // Iterating lines (rather than question()) also works when the key is piped in.
  // readline loads only when a key must be asked for, not at every licensed start.
  const prompt = process.getBuiltinModule('node:readline').createInterface({ input: io.input });
  const lines = prompt[Symbol.asyncIterator]();
  try {
    for (let attempt = 1; attempt <= MAX_KEY_ATTEMPTS; attempt++) {
      io.ask('License key: ');
      const line = await lines.next();
      if (line.done || !line.value.trim()) return;
      yield line.value;
    }
  } finally {
    // Hands stdin back to the app.
    prompt.close();
  }
}

/**
 * The usable license, or null after telling the user why the app cannot run. The client stays open
 * while the app runs: it refreshes in the background and keeps the token in protected memory; its
 * timers never keep the process alive.
 */
export async function passLicenseGate(options: LicenseClientOptions, io: GateIo = processIo): Promise<LicenseClient | null> {
  const license = await createLicenseClient(options);
  let status = await license.check();
  if (status.usable) return license;
  if (status.state !== 'unlicensed') {
    status = await license.refresh().catch(() => status);
    if (status.usable) return license;
  }
  io.say(statusMessage(status));
  for await (const key of licenseKeys(io)) {
    try {
      if ((await license.activate(key)).usable) return license;
    } catch (err) {
      if (!(err instanceof LicenseError)) throw err;
      io.say(err.userMessage);
    }
  }
  await license.dispose();
  return null;
}
