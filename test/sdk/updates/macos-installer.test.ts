import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { zipOf } from '../../builds/archives.js';
import { fakeArchiveTool } from '../support/archive-tools.js';
import { FakeCommands } from '../support/fake-commands.js';
import { snapshotTree } from '../support/install-tree.js';
import { RulesFs } from '../support/rules-fs.js';
import { pushOf, ScriptedPrompt, UpdateWorld, v1Content, v2Content } from '../support/updater-harness.js';

let world: UpdateWorld;
afterEach(() => world.close());

const stamp = () => world.clock.now().getTime();
const PLIST_V1 = '<plist><dict><key>CFBundleShortVersionString</key><string>1.0.0</string></dict></plist>';
const PLIST_V2 = PLIST_V1.replace('1.0.0', '2.0.0');

async function bundleWorld(zip: Record<string, string>) {
  world = await new UpdateWorld({
    os: 'darwin',
    arch: 'arm64',
    app: 'Notes.app/Contents/MacOS/notes',
    executable: true,
    files: { 'Notes.app/Contents/Info.plist': PLIST_V1 },
  }).start();
  world.authority.push = pushOf(world.packages, await zipOf(zip), { release_notes: 'New editor.' });
  const rules = new RulesFs('darwin').run(world.appFile);
  const commands = new FakeCommands(fakeArchiveTool);
  const launch = () => world.launch({ prompt: new ScriptedPrompt(['install']), fs: rules, commands });
  return { bundle: path.join(world.installDir, 'Notes.app'), rules, commands, launch };
}

const V2_BUNDLE = { 'Notes.app/Contents/MacOS/notes': v2Content(true), 'Notes.app/Contents/Info.plist': PLIST_V2 };

describe('macOS app bundle', () => {
  it('the filesystem seam keeps macOS rules: the running executable cannot be written, its bundle can be renamed', async () => {
    const { bundle, rules } = await bundleWorld(V2_BUNDLE);
    await expect(rules.writeFile(world.appFile, 'v2')).rejects.toMatchObject({ code: 'ETXTBSY' });
    await rules.rename(bundle, `${bundle}.moved`);
    expect(rules.isRunning(`${bundle}.moved/Contents/MacOS/notes`)).toBe(true);
    await rules.rename(`${bundle}.moved`, bundle);
  });

  it('unpacks the new .app with ditto beside the running one, renames the whole bundle aside, moves the new one in and restarts', async () => {
    const { bundle, rules, commands, launch } = await bundleWorld(V2_BUNDLE);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'restarting', offer: { releaseNotes: 'New editor.' } });
    const download = commands.calls[0]!.args[2]!;
    expect(commands.calls).toEqual([{ file: '/usr/bin/ditto', args: ['-x', '-k', download, `${bundle}.new.${stamp()}`], env: undefined }]);
    expect(fs.readdirSync(world.installDir).sort()).toEqual(['Notes.app', `Notes.app.old.${stamp()}`]);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(fs.readFileSync(path.join(bundle, 'Contents/Info.plist'), 'utf8')).toBe(PLIST_V2);
    const oldExe = path.join(`${bundle}.old.${stamp()}`, 'Contents/MacOS/notes');
    expect(fs.readFileSync(oldExe, 'utf8')).toBe(v1Content(true));
    expect(rules.isRunning(oldExe)).toBe(true);
    expect(world.process.spawned).toMatchObject([{ file: world.appFile, args: ['--open', 'notes.txt'] }]);
    expect(world.process.exits).toEqual([0]);
  });

  it('the new bundle refused and the running one refused its way back too: the old bundle is copied back whole, links and modes as they were', async () => {
    const { bundle, rules, launch } = await bundleWorld(V2_BUNDLE);
    fs.mkdirSync(path.join(bundle, 'Contents/Frameworks'));
    fs.symlinkSync('../MacOS/notes', path.join(bundle, 'Contents/Frameworks/Current'));
    const before = snapshotTree(bundle);
    rules.refuse('rename', (file) => file.includes('.new.'), 'EACCES', 1).refuse('rename', (file) => file.includes('.old.'), 'EPERM', 1);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'failed', code: 'INSTALL_FAILED' });
    expect(snapshotTree(bundle)).toEqual(before);
    expect(fs.readlinkSync(path.join(bundle, 'Contents/Frameworks/Current'))).toBe('../MacOS/notes');
    expect(fs.statSync(world.appFile).mode & 0o111).not.toBe(0);
    expect(world.process.exits).toEqual([]);
  });

  it.each([
    ['a package without the executable', { 'Notes.app/Contents/Info.plist': PLIST_V2 }],
    ['a package with another bundle name', { 'Other.app/Contents/MacOS/notes': v2Content(true) }],
  ])('refuses %s, leaving the install as it was', async (_label, zip) => {
    const { launch } = await bundleWorld(zip);
    const before = snapshotTree(world.installDir);
    expect(await (await launch()).checkInBackground()).toMatchObject({ status: 'failed', code: 'PACKAGE_REJECTED' });
    expect(snapshotTree(world.installDir)).toEqual(before);
    expect(world.process.exits).toEqual([]);
  });

  it('refuses a package ditto cannot unpack', async () => {
    await bundleWorld(V2_BUNDLE);
    world.authority.push = pushOf(world.packages, Buffer.from('not a zip'));
    const before = snapshotTree(world.installDir);
    const commands = new FakeCommands(async () => ({ code: 1, stdout: '', stderr: "ditto: Couldn't read PKZip signature" }));
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: new RulesFs('darwin'), commands })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'failed', code: 'PACKAGE_REJECTED', message: expect.stringContaining('PKZip') });
    expect(snapshotTree(world.installDir)).toEqual(before);
  });
});

describe('macOS app outside a bundle', () => {
  it('is one file, replaced as on Linux', async () => {
    world = await new UpdateWorld({ os: 'darwin', arch: 'x64', app: 'notes', executable: true }).start();
    world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)));
    const commands = new FakeCommands();
    await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: new RulesFs('darwin').run(world.appFile), commands })).checkInBackground();
    expect(commands.calls).toEqual([]);
    expect(fs.readdirSync(world.installDir).sort()).toEqual(['notes', `notes.old.${stamp()}`]);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
  });
});
