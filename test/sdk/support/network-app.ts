/**
 * A command-line app using the SDK, run as a child process by the network tests with its real
 * environment (proxy variables, trusted certificates). argv[2] is JSON: the client options and
 * what to do.
 * - `activate`: activates `key`, prints the state.
 * - `refresh`: prints the state after an explicit refresh (awaited at the top level: the process must wait for it).
 * - `start`: starts from the cache, prints the state, the network modules Node had loaded by then
 *   (`network modules: none` when none) and `waiting`, then waits for stdin to end
 *   (the test ends it once the authority holds the SDK's request) and prints `last line`: from
 *   there the process has nothing left to do but exit. With `dispose`, it disposes first.
 */
import { createLicenseClient, type LicenseClientOptions } from '../../../runtime-sdk/index.js';

interface Run {
  action: 'activate' | 'refresh' | 'start';
  options: LicenseClientOptions;
  key?: string;
  dispose?: boolean;
  /** Waits this long before acting: the SDK's own start-up refresh goes out first. */
  settleMs?: number;
}

const run = JSON.parse(process.argv[2]!) as Run;
const say = (line: string) => process.stdout.write(`${line}\n`);
const license = await createLicenseClient({
  ...run.options,
  // What the SDK logs goes to stderr, where the tests look for what must never be there.
  logger: {
    warn: (message, fields) => console.error('warn', message, JSON.stringify(fields)),
    debug: (message, fields) => console.error('debug', message, JSON.stringify(fields)),
  },
  // One computer, whatever probes this host has: the test is about the network.
  fingerprintProbes: [async () => ({ 'system.uuid': 'network-app-uuid', 'os.machine_id': 'network-app-machine' })],
});
await new Promise((resolve) => setTimeout(resolve, run.settleMs ?? 0));
if (run.action === 'activate') {
  say((await license.activate(run.key!)).state);
  await license.dispose();
} else if (run.action === 'refresh') {
  say((await license.refresh()).state);
  await license.dispose();
} else {
  say((await license.check()).state);
  // Node's list of the built-in modules it loaded (`NativeModule https`, ...); not node:net, which
  // Node loads itself for a stdout that is a pipe.
  const loaded = (process as unknown as { moduleLoadList: string[] }).moduleLoadList;
  const network = ['http', 'https', 'tls'].filter((name) => loaded.includes(`NativeModule ${name}`));
  say(`network modules: ${network.join(' ') || 'none'}`);
  say('waiting');
  for await (const _ of process.stdin);
  if (run.dispose) await license.dispose();
  say('last line');
}
