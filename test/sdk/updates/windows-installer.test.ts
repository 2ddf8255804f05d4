import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HELPER_SCRIPT_NAME } from '../../../runtime-sdk/updates/installers/windows.js';
import { quoteWindowsArgument, SWAP_HELPER_SCRIPT, windowsCommandLine } from '../../../runtime-sdk/updates/installers/windows-helper.js';
import { zipOf } from '../../builds/archives.js';
import { fakeArchiveTool } from '../support/archive-tools.js';
import { FakeCommands } from '../support/fake-commands.js';
import { snapshotTree } from '../support/install-tree.js';
import { RulesFs } from '../support/rules-fs.js';
import { pushOf, ScriptedPrompt, UpdateWorld, v1Content, v2Content } from '../support/updater-harness.js';

let world: UpdateWorld;
afterEach(() => world.close());

const stamp = () => world.clock.now().getTime();

describe('Windows one-file', () => {
  async function oneFile() {
    world = await new UpdateWorld({ os: 'win32', app: 'notes.exe', executable: true }).start();
    world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)));
    const rules = new RulesFs('win32').run(world.appFile);
    const waits: number[] = [];
    const launch = () => world.launch({ prompt: new ScriptedPrompt(['install']), fs: rules, retryBaseDelayMs: 100, sleep: async (ms) => void waits.push(ms) });
    return { rules, waits, launch };
  }

  it('the filesystem seam keeps Windows rules: a running exe cannot be overwritten or deleted, only renamed', async () => {
    const { rules } = await oneFile();
    await expect(rules.writeFile(world.appFile, 'v2')).rejects.toMatchObject({ code: 'EBUSY' });
    await expect(rules.rm(world.appFile)).rejects.toMatchObject({ code: 'EBUSY' });
    await expect(rules.rename(world.installDir, `${world.installDir}.moved`)).rejects.toMatchObject({ code: 'EPERM' });
  });

  it('renames the running exe, moves the new one in and restarts it with the same arguments', async () => {
    const { rules, launch } = await oneFile();
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'restarting' });
    const old = `${world.appFile}.old.${stamp()}`;
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(fs.readFileSync(old, 'utf8')).toBe(v1Content(true));
    // The old process keeps running from its new name until it exits.
    expect(rules.isRunning(old)).toBe(true);
    expect(world.process.spawned).toMatchObject([{ file: world.appFile, args: ['--open', 'notes.txt'] }]);
    expect(world.process.exits).toEqual([0]);
  });

  it('retries a rename refused for a moment (antivirus) with exponential backoff', async () => {
    const { rules, waits, launch } = await oneFile();
    rules.refuse('rename', (file) => file === world.appFile, 'EPERM', 2).refuse('rename', (file) => file.includes('.new.'), 'EBUSY', 1);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'restarting' });
    expect(waits).toEqual([100, 200, 100]);
  });

  it("retries the verified download's move to its cache name while antivirus holds the file just written", async () => {
    const { rules, waits, launch } = await oneFile();
    rules.refuse('rename', (file) => file.endsWith('.partial'), 'EPERM', 2);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'restarting' });
    expect(waits).toEqual([100, 200]);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
  });

  it.each([
    ['setting the running exe aside', (file: string) => file === world.appFile && !file.includes('.old.'), 'EBUSY'],
    ['moving the new exe in', (file: string) => file.includes('.new.'), 'EACCES'],
  ])('gives up cleanly after 3 retries %s: the old exe in place, nothing left over, no restart', async (_label, match, code) => {
    const { rules, waits, launch } = await oneFile();
    const before = snapshotTree(world.installDir);
    rules.refuse('rename', match, code, 4);
    const outcome = await (await launch()).checkInBackground();
    expect(outcome).toMatchObject({ status: 'failed', code: 'INSTALL_FAILED' });
    expect(waits.slice(0, 3)).toEqual([100, 200, 400]);
    expect(snapshotTree(world.installDir)).toEqual(before);
    expect(rules.isRunning(world.appFile)).toBe(true);
    expect(world.process.exits).toEqual([]);
    const state = JSON.parse(fs.readFileSync(path.join(world.dataDir, 'updater-state.json'), 'utf8'));
    expect(state.journal).toBeNull();
  });

  it('the new exe refused and the old one refused its way back too: the old exe is copied back, so the path never stays empty', async () => {
    const { rules, launch } = await oneFile();
    rules.refuse('rename', (file) => file.includes('.new.'), 'EACCES', 4).refuse('rename', (file) => file.includes('.old.'), 'EPERM', 4);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'failed', code: 'INSTALL_FAILED' });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v1Content(true));
    expect(world.process.exits).toEqual([]);
    const old = `${world.appFile}.old.${stamp()}`;
    const state = JSON.parse(fs.readFileSync(path.join(world.dataDir, 'updater-state.json'), 'utf8'));
    expect(state).toMatchObject({ journal: null, leftovers: [old] });
    // The set-aside copy is what still runs; once it no longer does, a later start removes it.
    expect(rules.isRunning(old)).toBe(true);
    expect(await (await world.launch({ fs: new RulesFs('win32') })).start()).toBe('none');
    expect(fs.existsSync(old)).toBe(false);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v1Content(true));
  });

  it('a copy back that fails too (a full disk) leaves no half copy at the path, and the next start settles the install', async () => {
    const { rules, launch } = await oneFile();
    rules
      .refuse('rename', (file) => file.includes('.new.'), 'EACCES', 4)
      .refuse('rename', (file) => file.includes('.old.'), 'EPERM', 4)
      .refuse('copyTree', (file) => file.includes('.old.'), 'ENOSPC', 1);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'failed' });
    expect(fs.readdirSync(world.installDir).filter((name) => name.includes('.back.'))).toEqual([]);
    // The journal says where everything is: the next start (from the set-aside copy, which still runs) puts a version back.
    await (await world.launch({ fs: new RulesFs('win32') })).start();
    expect(fs.existsSync(world.appFile)).toBe(true);
  });

  it('removes the old exe once it is no longer running, after the new version runs healthy', async () => {
    const { rules, launch } = await oneFile();
    await (await launch()).checkInBackground();
    const old = `${world.appFile}.old.${stamp()}`;
    // The new version starts while the old process is still exiting: its exe cannot be deleted yet.
    const v2 = await world.launch({ buildId: 'bld_v2', appVersion: '2.0.0', fs: rules });
    expect(await v2.start()).toBe('installed');
    await v2.markHealthy();
    expect(fs.existsSync(old)).toBe(true);
    // At a later start, with the old process gone, it goes.
    const later = await world.launch({ buildId: 'bld_v2', appVersion: '2.0.0', fs: new RulesFs('win32') });
    expect(await later.start()).toBe('none');
    expect(fs.existsSync(old)).toBe(false);
  });
});

describe('Windows one-folder', () => {
  const FILES = { 'Notes/resources/data.txt': 'data v1' };

  async function oneFolder() {
    world = await new UpdateWorld({ os: 'win32', app: 'Notes/notes.exe', executable: true, files: FILES }).start();
    const folder = path.dirname(world.appFile);
    const zip = await zipOf({ 'notes.exe': v2Content(true), 'resources/data.txt': 'data v2' });
    world.authority.push = pushOf(world.packages, zip);
    const rules = new RulesFs('win32').run(world.appFile);
    const commands = new FakeCommands(fakeArchiveTool);
    world.process.env.SystemRoot = 'C:\\Windows';
    const launch = () => world.launch({ prompt: new ScriptedPrompt(['install']), fs: rules, commands, windowsLayout: 'one-folder' });
    return { folder, rules, commands, launch };
  }

  it('unpacks the new folder beside the running one, hands the swap to a detached helper and exits', async () => {
    const { folder, rules, commands, launch } = await oneFolder();
    const before = snapshotTree(folder);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'restarting' });

    const staged = `${folder}.new.${stamp()}`;
    const download = commands.calls[0]!.args[2]!;
    expect(commands.calls).toEqual([{ file: 'C:\\Windows\\System32\\tar.exe', args: ['-x', '-f', download, '-C', staged], env: undefined }]);
    expect(fs.readFileSync(path.join(staged, 'resources/data.txt'), 'utf8')).toBe('data v2');
    // Nothing of the running install was touched: Windows would refuse it anyway.
    expect(snapshotTree(folder)).toEqual(before);
    await expect(rules.rename(folder, `${folder}.old`)).rejects.toMatchObject({ code: 'EPERM' });

    const script = path.join(path.dirname(download), HELPER_SCRIPT_NAME);
    expect(fs.readFileSync(script, 'utf8')).toBe(SWAP_HELPER_SCRIPT);
    const [helper] = world.process.spawned;
    expect(helper!.file).toBe('C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe');
    expect(helper!.args).toEqual(['-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', script]);
    expect(helper!.cwd).toBe(path.dirname(folder));
    expect(helper!.env).toMatchObject({
      LATCHKEY_SWAP_PID: String(world.process.pid),
      LATCHKEY_SWAP_TARGET: folder,
      LATCHKEY_SWAP_OLD: `${folder}.old.${stamp()}`,
      LATCHKEY_SWAP_STAGED: staged,
      LATCHKEY_SWAP_RELAUNCH: world.appFile,
      LATCHKEY_SWAP_ARGUMENTS: '--open notes.txt',
      LATCHKEY_SWAP_CWD: world.installDir,
    });
    expect(world.process.exits).toEqual([0]);
  });

  it('flushes every unpacked file and folder to the disk before the swap is handed over', async () => {
    const { folder, rules, launch } = await oneFolder();
    await (await launch()).checkInBackground();
    const staged = `${folder}.new.${stamp()}`;
    const flushed = rules.log.filter((line) => line.startsWith('fsync ')).map((line) => line.slice('fsync '.length));
    expect(flushed).toEqual(expect.arrayContaining([path.join(staged, 'notes.exe'), path.join(staged, 'resources/data.txt'), path.join(staged, 'resources'), staged]));
  });

  it('the next start after the helper swapped: installed, reported, and the old folder removed once healthy', async () => {
    const { folder, launch } = await oneFolder();
    await (await launch()).checkInBackground();
    // What the helper does once the app has exited.
    fs.renameSync(folder, `${folder}.old.${stamp()}`);
    fs.renameSync(`${folder}.new.${stamp()}`, folder);

    const v2 = await world.launch({ buildId: 'bld_v2', appVersion: '2.0.0', fs: new RulesFs('win32').run(world.appFile) });
    expect(await v2.start()).toBe('installed');
    expect(world.authority.updateReports).toMatchObject([{ event: 'installed', build_id: 'bld_v2', version: '2.0.0', platform: 'win-x64' }]);
    await v2.markHealthy();
    expect(fs.readdirSync(world.installDir)).toEqual(['Notes']);
    expect(fs.readFileSync(path.join(folder, 'resources/data.txt'), 'utf8')).toBe('data v2');
  });

  it('a helper that never ran: left alone for a while (it may be waiting), then rolled back', async () => {
    const { folder, launch } = await oneFolder();
    await (await launch()).checkInBackground();
    expect(await (await world.launch({ fs: new RulesFs('win32') })).start()).toBe('helper-pending');
    world.clock.advance(6 * 60_000);
    expect(await (await world.launch({ fs: new RulesFs('win32') })).start()).toBe('rolled-back');
    expect(fs.readdirSync(world.installDir)).toEqual(['Notes']);
    expect(fs.readFileSync(path.join(folder, 'resources/data.txt'), 'utf8')).toBe('data v1');
  });

  it('a helper script that cannot be written (a full disk): the install abandoned at once and counted once, the app running on', async () => {
    const { folder, rules, launch } = await oneFolder();
    const before = snapshotTree(world.installDir);
    rules.refuse('writeFile', (file) => file.endsWith(HELPER_SCRIPT_NAME), 'ENOSPC', 1);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'failed', code: 'DISK_FAILED' });
    expect(snapshotTree(world.installDir)).toEqual(before);
    expect(fs.existsSync(`${folder}.new.${stamp()}`)).toBe(false);
    expect(world.process.spawned).toEqual([]);
    expect(world.process.exits).toEqual([]);
    const state = JSON.parse(fs.readFileSync(path.join(world.dataDir, 'updater-state.json'), 'utf8'));
    expect(state.journal).toBeNull();
    expect(state.failedInstall).toMatchObject({ failures: 1 });
    // The next start finds nothing to settle: no helper is waited for, and nothing is rolled back or counted again.
    expect(await (await world.launch({ fs: new RulesFs('win32') })).start()).toBe('none');
  });

  it('refuses a package without the app in it, leaving the install as it was', async () => {
    const { folder, launch } = await oneFolder();
    world.authority.push = pushOf(world.packages, await zipOf({ 'readme.txt': 'no exe here' }));
    const before = snapshotTree(world.installDir);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'failed', code: 'PACKAGE_REJECTED' });
    expect(snapshotTree(world.installDir)).toEqual(before);
    expect(fs.existsSync(`${folder}.new.${stamp()}`)).toBe(false);
    expect(world.process.exits).toEqual([]);
  });
});

/** CommandLineToArgvW's rules, to read a command line back the way the started program will. */
function parseWindowsCommandLine(line: string): string[] {
  const args: string[] = [];
  let current = '';
  let quoted = false;
  let started = false;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (char === '\\') {
      let count = 0;
      for (; line[i] === '\\'; i++) count++;
      if (line[i] === '"') {
        current += '\\'.repeat(Math.floor(count / 2));
        if (count % 2 === 1) current += '"';
        else quoted = !quoted;
      } else {
        current += '\\'.repeat(count);
        i--;
      }
      started = true;
    } else if (char === '"') {
      quoted = !quoted;
      started = true;
    } else if (/\s/.test(char) && !quoted) {
      if (started) args.push(current);
      current = '';
      started = false;
    } else {
      current += char;
      started = true;
    }
  }
  if (started) args.push(current);
  return args;
}

describe('the relaunch command line of the Windows helper', () => {
  it.each([['plain'], [''], ['two words'], ['say "hi"'], ['C:\\Program Files\\'], ['trailing\\'], ['a\\\\"b'], ['tab\there'], ['ünïcødé ✓']])(
    'quotes %j so the program reads it back unchanged',
    (arg) => {
      expect(parseWindowsCommandLine(windowsCommandLine(['--x', arg, 'y']))).toEqual(['--x', arg, 'y']);
    },
  );

  it('leaves simple arguments bare', () => {
    expect(quoteWindowsArgument('--open')).toBe('--open');
    expect(quoteWindowsArgument('C:\\Users\\ana\\notes.txt')).toBe('C:\\Users\\ana\\notes.txt');
  });
});
