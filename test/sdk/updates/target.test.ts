import { describe, expect, it } from 'vitest';
import { resolveTarget } from '../../../runtime-sdk/updates/target.js';
import { fakeProcess } from '../support/fake-process.js';

const ARGS = ['--open', 'my notes.txt'];

describe('what an update replaces, and how the app starts again', () => {
  it('a single executable: the executable itself, started with the same arguments', () => {
    const proc = fakeProcess({ execPath: '/opt/notes/notes', script: null, args: ARGS });
    expect(resolveTarget('linux', proc)).toEqual({
      os: 'linux',
      appFile: '/opt/notes/notes',
      kind: 'single-executable',
      replaced: '/opt/notes/notes',
      packaging: 'file',
      relaunch: { file: '/opt/notes/notes', args: ARGS },
    });
  });

  it('a JavaScript bundle: the bundle, run again by the same node with its flags', () => {
    const proc = fakeProcess({ execPath: '/usr/bin/node', execArgv: ['--enable-source-maps'], script: '/opt/notes/notes.mjs', args: ARGS });
    expect(resolveTarget('linux', proc)).toMatchObject({
      kind: 'javascript-bundle',
      replaced: '/opt/notes/notes.mjs',
      relaunch: { file: '/usr/bin/node', args: ['--enable-source-maps', '/opt/notes/notes.mjs', ...ARGS] },
    });
  });

  it('the file the engine names, relative to the working folder', () => {
    const proc = fakeProcess({ execPath: '/usr/bin/node', script: '/opt/loader.js', cwd: '/opt/notes' });
    expect(resolveTarget('linux', proc, { appFile: 'protected.mjs' })).toMatchObject({ appFile: '/opt/notes/protected.mjs', replaced: '/opt/notes/protected.mjs' });
  });

  it('macOS: the whole .app when the executable is inside one', () => {
    const exe = '/Applications/Notes Pro.app/Contents/MacOS/notes';
    expect(resolveTarget('darwin', fakeProcess({ execPath: exe, script: null, args: ARGS }))).toMatchObject({
      replaced: '/Applications/Notes Pro.app',
      packaging: 'app-bundle',
      relaunch: { file: exe, args: ARGS },
    });
    expect(resolveTarget('darwin', fakeProcess({ execPath: '/usr/local/bin/notes', script: null }))).toMatchObject({ replaced: '/usr/local/bin/notes', packaging: 'file' });
  });

  it('Windows: the exe for a one-file install, the install folder for a one-folder install', () => {
    const proc = fakeProcess({ execPath: '/apps/Notes/notes.exe', script: null });
    expect(resolveTarget('win32', proc)).toMatchObject({ replaced: '/apps/Notes/notes.exe', packaging: 'file' });
    expect(resolveTarget('win32', proc, { windowsLayout: 'one-folder' })).toMatchObject({ replaced: '/apps/Notes', packaging: 'folder' });
  });

  it('refuses an OS it has no installer for', () => {
    expect(() => resolveTarget('freebsd', fakeProcess())).toThrow(expect.objectContaining({ code: 'TARGET_UNSUPPORTED' }));
  });
});
