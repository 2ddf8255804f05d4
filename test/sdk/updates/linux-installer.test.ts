import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RulesFs } from '../support/rules-fs.js';
import { pushOf, ScriptedPrompt, UpdateWorld, v1Content, v2Content, type WorldOptions } from '../support/updater-harness.js';

let world: UpdateWorld;
afterEach(() => world.close());

async function installedWorld(options: WorldOptions) {
  world = await new UpdateWorld(options).start();
  world.authority.push = pushOf(world.packages, Buffer.from(v2Content(world.executable)));
  return world;
}

const stamp = () => world.clock.now().getTime();
const listing = () => fs.readdirSync(world.installDir).sort();

describe('Linux install, for real on this filesystem', () => {
  it('a single executable: the new file in place with the old mode, the old one renamed <name>.old.<timestamp>, restarted with the same arguments', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'restarting' });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(fs.statSync(world.appFile).mode & 0o7777).toBe(0o750);
    expect(listing()).toEqual(['notes', `notes.old.${stamp()}`]);
    expect(fs.readFileSync(path.join(world.installDir, `notes.old.${stamp()}`), 'utf8')).toBe(v1Content(true));
    expect(world.process.spawned).toEqual([{ file: world.appFile, args: ['--open', 'notes.txt'], env: undefined, cwd: world.installDir, mode: 'foreground' }]);
    expect(world.process.exits).toEqual([0]);
  });

  it('a command-line app exits with the exit code of the new version it ran in its place', async () => {
    await installedWorld({ app: 'notes', executable: true });
    world.process.foregroundExitCode = 3;
    expect(await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground()).toMatchObject({ status: 'restarting' });
    expect(world.process.spawned).toMatchObject([{ mode: 'foreground' }]);
    expect(world.process.exits).toEqual([3]);
  });

  it('a GUI app starts the new version detached and exits at once', async () => {
    await installedWorld({ app: 'notes', executable: true });
    await (await world.launch({ prompt: new ScriptedPrompt(['install']), gui: true })).checkInBackground();
    expect(world.process.spawned).toMatchObject([{ file: world.appFile, mode: 'detached' }]);
    expect(world.process.exits).toEqual([0]);
  });

  it('a JavaScript bundle: the bundle is replaced and node runs it again with its flags and the arguments', async () => {
    await installedWorld({ app: 'app.mjs' });
    await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground();
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(false));
    expect(fs.statSync(world.appFile).mode & 0o7777).toBe(0o750);
    expect(world.process.spawned[0]).toMatchObject({ file: '/usr/bin/node', args: ['--no-warnings', world.appFile, '--open', 'notes.txt'] });
  });

  it('copies the download when the cache is on another volume than the app', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const volumes = new RulesFs('linux', [world.dataDir, world.installDir]);
    await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: volumes })).checkInBackground();
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(volumes.log.some((op) => op.startsWith('copyFile '))).toBe(true);
  });

  it('without hard links (FAT), renames the running file aside instead', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const noLinks = new RulesFs('linux').refuse('link', () => true, 'EPERM', 1);
    await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: noLinks })).checkInBackground();
    expect(noLinks.log).toContain(`rename ${world.appFile} -> ${world.appFile}.old.${stamp()}`);
    expect(listing()).toEqual(['notes', `notes.old.${stamp()}`]);
  });

  it('takes a refused move of the verified download as final, unlike Windows: a disk failure, the app untouched', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const before = fs.readdirSync(world.installDir);
    const waits: number[] = [];
    const refusing = new RulesFs('linux').refuse('rename', (file) => file.endsWith('.partial'), 'EPERM', 1);
    const launch = world.launch({ prompt: new ScriptedPrompt(['install']), fs: refusing, sleep: async (ms) => void waits.push(ms) });
    expect(await (await launch).checkInBackground()).toMatchObject({ status: 'failed', code: 'DISK_FAILED' });
    expect(waits).toEqual([]);
    expect(fs.readdirSync(world.installDir)).toEqual(before);
  });

  it('a new file that cannot be moved in leaves the old one in place and nothing else', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const before = fs.readdirSync(world.installDir);
    const refusing = new RulesFs('linux').refuse('rename', (file) => file.includes('.new.'), 'EACCES', 1);
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: refusing })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'failed', code: 'INSTALL_FAILED' });
    expect(fs.readdirSync(world.installDir)).toEqual(before);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v1Content(true));
    expect(world.process.exits).toEqual([]);
  });

  it('a new version that cannot be started stays installed for the next launch; this run goes on', async () => {
    await installedWorld({ app: 'notes', executable: true });
    world.process.failSpawn = true;
    expect(await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground()).toMatchObject({ status: 'installed' });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(world.process.exits).toEqual([]);
  });

  it('lets the app save its work before restarting', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const order: string[] = [];
    world.process.runInForeground = async () => {
      order.push('spawn');
      return 0;
    };
    const beforeRestart = async () => void order.push(`saved while ${fs.readFileSync(world.appFile, 'utf8').includes('v2') ? 'v2' : 'v1'} is in place`);
    await (await world.launch({ prompt: new ScriptedPrompt(['install']), beforeRestart })).checkInBackground();
    expect(order).toEqual(['saved while v2 is in place', 'spawn']);
  });
});

describe('the first start of the new version', () => {
  it('reports it installed once, and removes the old copy once it runs healthy', async () => {
    await installedWorld({ app: 'notes', executable: true });
    await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground();
    expect(world.authority.updateReports).toEqual([]);

    const v2 = await world.launch({ buildId: 'bld_v2', appVersion: '2.0.0' });
    expect(await v2.start()).toBe('installed');
    expect(world.authority.updateReports).toMatchObject([{ event: 'installed', build_id: 'bld_v2', version: '2.0.0', platform: 'linux-x64' }]);
    expect(listing()).toEqual(['notes', `notes.old.${stamp()}`]);

    await v2.markHealthy();
    v2.dispose();
    expect(listing()).toEqual(['notes']);
    expect(fs.readdirSync(path.join(world.dataDir, 'updates'))).toEqual([]);

    expect(await (await world.launch({ buildId: 'bld_v2', appVersion: '2.0.0' })).start()).toBe('none');
    expect(world.authority.updateReports).toHaveLength(1);
  });

  it('does not offer the build it is already running', async () => {
    await installedWorld({ app: 'notes', executable: true });
    const prompt = new ScriptedPrompt();
    expect(await (await world.launch({ prompt, buildId: 'bld_v2' })).checkInBackground()).toEqual({ status: 'no-update' });
    expect(prompt.offers).toEqual([]);
  });
});
