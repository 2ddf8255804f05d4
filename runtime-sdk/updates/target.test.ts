import { describe, expect, it } from 'vitest';
import type { AppProcess } from '../platform.js';
import { resolveTarget } from './target.js';

const ARGS = ['--open', 'my notes.txt'];

/** The running app as resolveTarget reads it; starting and exiting are never called here. */
function running(described: Partial<AppProcess>): AppProcess {
  const never = () => {
    throw new Error('not started in a rule test');
  };
  return {
    pid: 1,
    runtime: 'single-executable',
    execPath: '/usr/bin/node',
    execArgv: [],
    script: null,
    args: [],
    env: {},
    cwd: '/home/ana',
    spawnDetached: never,
    runInForeground: never,
    exit: never,
    ...described,
  };
}

describe('what an update replaces, and how the app starts again', () => {
  it('a single executable: the executable itself, started with the same arguments', () => {
    expect(resolveTarget('linux', running({ execPath: '/opt/notes/notes', args: ARGS }))).toEqual({
      os: 'linux',
      appFile: '/opt/notes/notes',
      kind: 'single-executable',
      replaced: '/opt/notes/notes',
      packaging: 'file',
      relaunch: { file: '/opt/notes/notes', args: ARGS },
    });
  });

  it('a JavaScript bundle: the bundle, run again by the same node with its flags', () => {
    const proc = running({ runtime: 'node', execPath: '/usr/bin/node', execArgv: ['--enable-source-maps'], script: '/opt/notes/notes.mjs', args: ARGS });
    expect(resolveTarget('linux', proc)).toMatchObject({
      kind: 'javascript-bundle',
      replaced: '/opt/notes/notes.mjs',
      relaunch: { file: '/usr/bin/node', args: ['--enable-source-maps', '/opt/notes/notes.mjs', ...ARGS] },
    });
  });

  it('macOS: the whole .app when the executable is inside one', () => {
    const exe = '/Applications/Notes Pro.app/Contents/MacOS/notes';
    expect(resolveTarget('darwin', running({ execPath: exe, args: ARGS }))).toMatchObject({
      replaced: '/Applications/Notes Pro.app',
      packaging: 'app-bundle',
      relaunch: { file: exe, args: ARGS },
    });
    expect(resolveTarget('darwin', running({ execPath: '/usr/local/bin/notes' }))).toMatchObject({ replaced: '/usr/local/bin/notes', packaging: 'file' });
  });

  it('Windows: the exe for a one-file install, the install folder for a one-folder install', () => {
    const proc = running({ execPath: '/apps/Notes/notes.exe' });
    expect(resolveTarget('win32', proc)).toMatchObject({ replaced: '/apps/Notes/notes.exe', packaging: 'file' });
    expect(resolveTarget('win32', proc, { windowsLayout: 'one-folder' })).toMatchObject({ replaced: '/apps/Notes', packaging: 'folder' });
  });

  it('refuses an OS it has no installer for', () => {
    expect(() => resolveTarget('freebsd', running({}))).toThrow(expect.objectContaining({ code: 'TARGET_UNSUPPORTED' }));
  });
});

describe('Electron: the executable, never argv[1]', () => {
  const electron = (execPath: string, env: NodeJS.ProcessEnv = {}) => running({ runtime: 'electron', execPath, args: ['/home/ana/Letter.notes'], env });

  it('macOS: the .app around the executable, relaunched with the document', () => {
    expect(resolveTarget('darwin', electron('/Applications/Notes.app/Contents/MacOS/Notes'))).toEqual({
      os: 'darwin',
      appFile: '/Applications/Notes.app/Contents/MacOS/Notes',
      kind: 'single-executable',
      replaced: '/Applications/Notes.app',
      packaging: 'app-bundle',
      relaunch: { file: '/Applications/Notes.app/Contents/MacOS/Notes', args: ['/home/ana/Letter.notes'] },
    });
  });

  it('Windows: the install folder by default (an Electron app is a folder of files), one file when the app says so', () => {
    expect(resolveTarget('win32', electron('/apps/Notes/Notes.exe'))).toMatchObject({ replaced: '/apps/Notes', packaging: 'folder', relaunch: { file: '/apps/Notes/Notes.exe' } });
    expect(resolveTarget('win32', electron('/apps/Notes/Notes.exe'), { windowsLayout: 'one-file' })).toMatchObject({ replaced: '/apps/Notes/Notes.exe', packaging: 'file' });
  });

  it('Linux: the AppImage it was started from (its executable sits in the image mount), else the executable', () => {
    const appImage = electron('/tmp/.mount_NotesXYZ/notes', { APPIMAGE: '/home/ana/Apps/Notes.AppImage', APPDIR: '/tmp/.mount_NotesXYZ' });
    expect(resolveTarget('linux', appImage)).toMatchObject({
      replaced: '/home/ana/Apps/Notes.AppImage',
      relaunch: { file: '/home/ana/Apps/Notes.AppImage', args: ['/home/ana/Letter.notes'] },
    });
    expect(resolveTarget('linux', electron('/opt/Notes/notes'))).toMatchObject({ replaced: '/opt/Notes/notes' });
  });

  it("Linux: another app's AppImage variables, inherited from the AppImage that started this one, are never its target", () => {
    const inherited = { APPIMAGE: '/home/ana/Apps/Editor.AppImage', APPDIR: '/tmp/.mount_EditorABC' };
    expect(resolveTarget('linux', electron('/opt/Notes/notes', inherited))).toMatchObject({ appFile: '/opt/Notes/notes', replaced: '/opt/Notes/notes' });
    // A mount whose name this one only starts with is another mount.
    expect(resolveTarget('linux', electron('/tmp/.mount_EditorABCD/notes', inherited))).toMatchObject({ replaced: '/tmp/.mount_EditorABCD/notes' });
    expect(resolveTarget('linux', electron('/tmp/.mount_NotesXYZ/notes', { APPIMAGE: '/home/ana/Apps/Notes.AppImage' }))).toMatchObject({
      replaced: '/tmp/.mount_NotesXYZ/notes',
    });
  });

  it('an Electron app started from its source folder (electron .) is not updated', () => {
    expect(() => resolveTarget('linux', running({ runtime: 'electron-source', execPath: '/dev/app/node_modules/electron/dist/electron' }))).toThrow(
      expect.objectContaining({ code: 'TARGET_UNSUPPORTED' }),
    );
  });
});

describe('an appFile the app names', () => {
  it('is accepted when it is the app itself, relative to the working folder', () => {
    const proc = running({ runtime: 'node', script: '/opt/notes/protected.mjs', cwd: '/opt/notes' });
    expect(resolveTarget('linux', proc, { appFile: 'protected.mjs' })).toMatchObject({ appFile: '/opt/notes/protected.mjs', replaced: '/opt/notes/protected.mjs' });
  });

  it.each([
    ['the document Electron was opened with', running({ runtime: 'electron', execPath: '/opt/Notes/notes', args: ['/home/ana/Letter.notes'] }), '/home/ana/Letter.notes'],
    ['node itself, for an app that is a script', running({ runtime: 'node', script: '/opt/notes/app.mjs' }), '/usr/bin/node'],
    ['another file beside the app', running({ execPath: '/opt/notes/notes' }), '/opt/notes/libnotes.so'],
  ])('is refused when it is %s', (_label, proc, appFile) => {
    expect(() => resolveTarget('linux', proc, { appFile })).toThrow(expect.objectContaining({ code: 'APP_FILE_REFUSED' }));
  });
});
