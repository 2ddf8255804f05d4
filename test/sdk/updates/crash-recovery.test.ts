import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { zipOf } from '../../builds/archives.js';
import { fakeArchiveTool } from '../support/archive-tools.js';
import { FakeCommands } from '../support/fake-commands.js';
import { RulesFs } from '../support/rules-fs.js';
import { pushOf, ScriptedPrompt, UpdateWorld, v2Content, type WorldOptions } from '../support/updater-harness.js';

/** Far more operations than an install takes: the loop ends when an install runs to completion. */
const MAX_CRASH_POINTS = 120;

interface Scenario {
  world: WorldOptions;
  os: 'linux' | 'win32' | 'darwin';
  package: () => Promise<Buffer>;
  /** What the install dir holds besides the app once it is settled. */
  names: { target: string; old: (stamp: number) => string };
}

const SCENARIOS: [string, Scenario][] = [
  [
    'Linux single executable',
    { world: { app: 'notes', executable: true }, os: 'linux', package: async () => Buffer.from(v2Content(true)), names: { target: 'notes', old: (t) => `notes.old.${t}` } },
  ],
  [
    'Windows one-file',
    {
      world: { os: 'win32', app: 'notes.exe', executable: true },
      os: 'win32',
      package: async () => Buffer.from(v2Content(true)),
      names: { target: 'notes.exe', old: (t) => `notes.exe.old.${t}` },
    },
  ],
  [
    'macOS app bundle',
    {
      world: { os: 'darwin', arch: 'arm64', app: 'Notes.app/Contents/MacOS/notes', executable: true },
      os: 'darwin',
      package: () => zipOf({ 'Notes.app/Contents/MacOS/notes': v2Content(true) }, { mode: { 'Notes.app/Contents/MacOS/notes': 0o100755 } }),
      names: { target: 'Notes.app', old: (t) => `Notes.app.old.${t}` },
    },
  ],
];

/** Runs the app's file (a shell script standing for the executable): what it prints is the version that runs. */
const runs = (appFile: string) => execFileSync(appFile, [], { encoding: 'utf8' }).trim();

describe.each(SCENARIOS)('a crash at any step of an install (%s)', (_name, scenario) => {
  it('leaves the old or the new version runnable once the next start has reconciled the journal', async () => {
    const settled: string[] = [];
    for (let crashAfter = 0; crashAfter < MAX_CRASH_POINTS; crashAfter++) {
      const world = await new UpdateWorld(scenario.world).start();
      try {
        world.authority.push = pushOf(world.packages, await scenario.package());
        const commands = new FakeCommands(fakeArchiveTool);
        const crashing = new RulesFs(scenario.os).run(world.appFile).crashAfterOperations(crashAfter);
        const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: crashing, commands })).checkInBackground();
        if (!crashing.didCrash) {
          expect(outcome).toMatchObject({ status: 'restarting' });
          // Every crash point before this one was tried, and the install has them all.
          expect(crashAfter).toBeGreaterThan(10);
          break;
        }
        expect(outcome).toMatchObject({ status: 'failed' });

        // The process died; its next start runs whichever version the path holds.
        const next = await world.launch({ fs: new RulesFs(scenario.os), commands });
        const reconciled = await next.start();
        const stamp = world.clock.now().getTime();
        const names = fs.readdirSync(world.installDir).sort();
        // The crash is an error thrown mid-install here, which the updater reports as a failed install.
        const reports = world.authority.updateReports;
        expect(reports.filter((r) => r.event !== 'installed')).toEqual(reports.filter((r) => r.event === 'failed' && r.build_id === 'bld_v2'));
        const installs = reports.filter((r) => r.event === 'installed');
        if (reconciled === 'installed') {
          expect(runs(world.appFile)).toBe('v2');
          expect(names).toEqual([scenario.names.target, scenario.names.old(stamp)].sort());
          expect(installs).toMatchObject([{ event: 'installed', build_id: 'bld_v2' }]);
        } else {
          expect(['none', 'rolled-back']).toContain(reconciled);
          expect(runs(world.appFile)).toBe('v1');
          expect(names).toEqual([scenario.names.target]);
          expect(installs).toEqual([]);
        }
        await next.markHealthy();
        next.dispose();
        expect(fs.readdirSync(world.installDir)).toEqual([scenario.names.target]);
        settled.push(`${crashAfter}:${reconciled}`);
      } finally {
        await world.close();
      }
    }
    // Both ends were reached: early crashes roll back, late ones roll forward.
    expect(settled.some((s) => s.endsWith(':installed'))).toBe(true);
    expect(settled.some((s) => s.endsWith(':rolled-back'))).toBe(true);
  });
});

describe('an interrupted swap of a folder', () => {
  it('with the install folder renamed aside and the new one not moved in, the next start renames it back', async () => {
    const world = await new UpdateWorld({ os: 'win32', app: 'Notes/notes.exe', executable: true }).start();
    try {
      world.authority.push = pushOf(world.packages, await zipOf({ 'notes.exe': v2Content(true) }));
      world.process.env.SystemRoot = 'C:\\Windows';
      const rules = new RulesFs('win32').run(world.appFile);
      const commands = new FakeCommands(fakeArchiveTool);
      await (await world.launch({ prompt: new ScriptedPrompt(['install']), fs: rules, commands, windowsLayout: 'one-folder' })).checkInBackground();
      const folder = path.dirname(world.appFile);
      const stamp = world.clock.now().getTime();
      // The helper stopped between its two renames, long ago.
      fs.renameSync(folder, `${folder}.old.${stamp}`);
      world.clock.advance(60 * 60_000);
      expect(await (await world.launch({ fs: new RulesFs('win32'), commands })).start()).toBe('rolled-back');
      expect(fs.readdirSync(world.installDir)).toEqual(['Notes']);
      expect(runs(world.appFile)).toBe('v1');
    } finally {
      await world.close();
    }
  });
});

describe('a state write cut off by a crash', () => {
  it('leaves a temporary sibling that a later start removes once the state was replaced long after it, never one another instance may be writing now', async () => {
    const world = await new UpdateWorld({ app: 'notes', executable: true }).start();
    try {
      // What a process killed between writing and renaming its update of the state leaves, and the
      // state as a later write left it (unreadable here: read as a fresh state).
      const state = path.join(world.dataDir, 'updater-state.json');
      fs.mkdirSync(world.dataDir, { recursive: true });
      const [abandoned, beingWritten] = [`${state}.4242.tmp`, `${state}.4343.tmp`];
      for (const file of [state, abandoned, beingWritten]) fs.writeFileSync(file, '{"format":"latchkey-upd');
      const hourAgo = new Date(Date.now() - 60 * 60_000);
      fs.utimesSync(abandoned, hourAgo, hourAgo);

      expect(await (await world.launch({})).start()).toBe('none');
      expect(fs.existsSync(abandoned)).toBe(false);
      expect(fs.existsSync(beingWritten)).toBe(true);
    } finally {
      await world.close();
    }
  });
});
