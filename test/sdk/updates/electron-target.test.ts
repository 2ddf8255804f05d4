/**
 * An Electron app opened with a document: Electron's argv[1] is that document. The update must
 * replace the app's executable and leave the document byte for byte, and an `appFile` naming the
 * document is refused before anything is asked, fetched or written.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appProcessOf, type RunningProcess } from '../../../runtime-sdk/app-process.js';
import { tempDir } from '../support/fake-machine.js';
import { recordingProcess } from '../support/fake-process.js';
import { pushOf, ScriptedPrompt, UpdateWorld, v2Content } from '../support/updater-harness.js';

const DOCUMENT = randomBytes(4096);
let documents: string;
let world: UpdateWorld;
afterEach(async () => {
  await world.close();
  fs.rmSync(documents, { recursive: true, force: true });
});

/** `process` as Electron's main process has it when the packaged app is opened with `document`. */
function electronOpening(execPath: string, cwd: string, document: string): RunningProcess {
  return {
    pid: process.pid,
    platform: 'linux',
    execPath,
    execArgv: [],
    argv: [execPath, document],
    env: {},
    versions: { node: '20.18.0', electron: '33.2.0' },
    cwd: () => cwd,
    exit: () => undefined,
  };
}

async function electronWorld() {
  documents = tempDir('latchkey-documents-');
  const document = path.join(documents, 'Letter.notes');
  fs.writeFileSync(document, DOCUMENT);
  world = await new UpdateWorld({
    app: 'notes',
    executable: true,
    process: (appFile, installDir) => recordingProcess(appProcessOf(electronOpening(appFile, installDir, document))),
  }).start();
  world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)));
  return document;
}

describe('an Electron app opened with a document', () => {
  it('replaces its executable, keeps the document byte for byte, and reopens it in the new version (detached: a GUI app)', async () => {
    const document = await electronWorld();
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'restarting' });
    expect(fs.readFileSync(document).equals(DOCUMENT)).toBe(true);
    expect(fs.readdirSync(documents)).toEqual(['Letter.notes']);
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(world.process.spawned).toMatchObject([{ file: world.appFile, args: [document], mode: 'detached' }]);
    expect(world.process.exits).toEqual([0]);
  });

  it('refuses an appFile naming the document before asking, fetching or writing anything', async () => {
    const document = await electronWorld();
    const prompt = new ScriptedPrompt(['install']);
    const outcome = await (await world.launch({ prompt, appFile: document })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'failed', code: 'APP_FILE_REFUSED' });
    expect(fs.readFileSync(document).equals(DOCUMENT)).toBe(true);
    expect(prompt.offers).toEqual([]);
    expect(world.packages.ranges).toEqual([]);
    expect(world.authority.requests.filter((r) => r.path.startsWith('/v1/updates/'))).toEqual([]);
    expect(world.process.spawned).toEqual([]);
  });

  it('accepts an appFile that is the executable, through a link to it', async () => {
    await electronWorld();
    const link = path.join(documents, 'notes-link');
    fs.symlinkSync(world.appFile, link);
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']), appFile: link })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'restarting' });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
  });
});
