import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CommandResult } from '../../../runtime-sdk/updates/commands.js';
import { systemPrompt, type SystemPromptOptions, type UpdateOffer } from '../../../runtime-sdk/updates/index.js';
import { asQtPlainText } from '../../../runtime-sdk/updates/prompt/dialogs.js';
import { askAtTerminal } from '../../../runtime-sdk/updates/prompt/terminal.js';
import { FakeCommands } from '../support/fake-commands.js';
import { pushOf, ScriptedPrompt, UpdateWorld } from '../support/updater-harness.js';

const NOTES = `Fixes "quotes" & 'apostrophes', $(rm -rf ~) \`whoami\` %PATH% <b>bold</b>\nline 2 \\n ✓ ünïcødé`;
const OFFER: UpdateOffer = { appName: 'Notes Pro', currentVersion: '1.0.0', version: '2.0.0', buildId: 'bld_v2', releaseNotes: NOTES };
const MESSAGE = `Notes Pro 2.0.0 is available. You have 1.0.0.\n\n${NOTES}`;

describe('the choices', () => {
  let world: UpdateWorld;
  beforeEach(async () => {
    world = await new UpdateWorld().start();
    world.authority.push = pushOf(world.packages, Buffer.from('console.log("v2")\n'));
  });
  afterEach(() => world.close());

  it('Install now: downloads, replaces the app and restarts it with the same arguments', async () => {
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'restarting', offer: { buildId: 'bld_v2' } });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe('console.log("v2")\n');
    expect(world.process.spawned).toEqual([
      { file: '/usr/bin/node', args: ['--no-warnings', world.appFile, '--open', 'notes.txt'], env: undefined, cwd: world.installDir, mode: 'foreground' },
    ]);
    expect(world.process.exits).toEqual([0]);
  });

  it('Not right now (or closing the dialog): nothing is kept, the same offer comes at the next launch', async () => {
    const first = new ScriptedPrompt(['later']);
    expect(await (await world.launch({ prompt: first })).checkInBackground()).toMatchObject({ status: 'later' });
    const second = new ScriptedPrompt(['later']);
    expect(await (await world.launch({ prompt: second })).checkInBackground()).toMatchObject({ status: 'later' });
    expect(second.offers).toEqual(first.offers);
    expect(world.authority.updateReports).toEqual([]);
  });

  it('Skip this version: reported, not asked again for that build, asked again for a newer one', async () => {
    expect(await (await world.launch({ prompt: new ScriptedPrompt(['skip']) })).checkInBackground()).toMatchObject({ status: 'skipped' });
    expect(world.authority.updateReports).toMatchObject([{ event: 'skipped', build_id: 'bld_v2', version: '1.0.0', platform: 'linux-x64' }]);

    const again = new ScriptedPrompt();
    expect(await (await world.launch({ prompt: again })).checkInBackground()).toMatchObject({ status: 'skipped-earlier', offer: { buildId: 'bld_v2' } });
    expect(again.offers).toEqual([]);

    world.authority.push = pushOf(world.packages, Buffer.from('console.log("v3")\n'), { build_id: 'bld_v3', version: '3.0.0', serial: 8 });
    const newer = new ScriptedPrompt(['later']);
    expect(await (await world.launch({ prompt: newer })).checkInBackground()).toMatchObject({ status: 'later', offer: { buildId: 'bld_v3' } });
  });

  it('a skipped report that could not be sent goes out at the next start, once', async () => {
    // The user answers while the authority is unreachable.
    const offline = { ask: async () => ((world.authority.down = true), 'skip' as const) };
    expect(await (await world.launch({ prompt: offline })).checkInBackground()).toMatchObject({ status: 'skipped' });
    world.authority.down = false;
    await (await world.launch()).start();
    await (await world.launch()).start();
    const attempts = world.authority.updateReports;
    expect(attempts).toHaveLength(2);
    expect(attempts[1]).toMatchObject({ event: 'skipped', build_id: 'bld_v2' });
  });

  it('a prompt that throws counts as Not right now', async () => {
    const outcome = await (await world.launch({ prompt: { ask: async () => Promise.reject(new Error('window system gone')) } })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'later' });
  });
});

const ok = (stdout: string, code = 0): CommandResult => ({ code, stdout, stderr: '' });

function promptWith(os: NodeJS.Platform, commands: FakeCommands, extra: Partial<SystemPromptOptions> = {}) {
  return systemPrompt({ os, env: { PATH: '/usr/bin', SystemRoot: 'C:\\Windows' }, commands, terminal: () => undefined, ...extra });
}

describe('the default dialog, per OS', () => {
  it('macOS: osascript with three buttons; the texts are arguments of the script, verbatim', async () => {
    const commands = new FakeCommands(() => ok('Skip this version\n'));
    expect(await promptWith('darwin', commands).ask(OFFER)).toBe('skip');
    const [call] = commands.calls;
    expect(call!.file).toBe('/usr/bin/osascript');
    const script = call!.args.filter((_, i) => call!.args[i - 1] === '-e');
    expect(script.join('\n')).not.toContain('Fixes');
    expect(script.join('\n')).toContain('buttons {"Skip this version", "Not right now", "Install now"} default button "Install now" cancel button "Not right now"');
    expect(call!.args.slice(-2)).toEqual([MESSAGE, 'Notes Pro update']);
  });

  it('Windows: a PowerShell form from a constant, encoded script; the texts in environment variables, verbatim', async () => {
    const commands = new FakeCommands(() => ok('install\r\n'));
    expect(await promptWith('win32', commands).ask(OFFER)).toBe('install');
    const [call] = commands.calls;
    expect(call!.file).toBe('C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe');
    expect(call!.args.slice(0, -1)).toEqual(['-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-STA', '-EncodedCommand']);
    const script = Buffer.from(call!.args.at(-1)!, 'base64').toString('utf16le');
    expect(script).toContain('$notes.Text = $env:LATCHKEY_UPDATE_NOTES');
    expect(script).not.toContain('Fixes');
    expect(call!.env).toMatchObject({
      LATCHKEY_UPDATE_NOTES: NOTES,
      LATCHKEY_UPDATE_TITLE: 'Notes Pro update',
      LATCHKEY_UPDATE_HEADLINE: 'Notes Pro 2.0.0 is available. You have 1.0.0.',
    });
  });

  it('Linux desktop: zenity, plain text (no markup), renamed buttons and an extra one', async () => {
    const commands = new FakeCommands(() => ok('', 0), { zenity: '/usr/bin/zenity' });
    expect(await promptWith('linux', commands, { env: { DISPLAY: ':0' } }).ask(OFFER)).toBe('install');
    expect(commands.calls[0]).toMatchObject({
      file: '/usr/bin/zenity',
      args: [
        '--question',
        '--title=Notes Pro update',
        `--text=${MESSAGE}`,
        '--no-markup',
        '--ok-label=Install now',
        '--cancel-label=Not right now',
        '--extra-button=Skip this version',
        '--width=520',
      ],
    });
  });

  it('Linux desktop without zenity: kdialog, the text escaped as Qt rich text so that it shows as written', async () => {
    const commands = new FakeCommands(() => ok('', 1), { kdialog: '/usr/bin/kdialog' });
    expect(await promptWith('linux', commands, { env: { WAYLAND_DISPLAY: 'wayland-0' } }).ask(OFFER)).toBe('skip');
    const { file, args } = commands.calls[0]!;
    expect(file).toBe('/usr/bin/kdialog');
    expect(args.slice(0, -1)).toEqual([
      '--title',
      'Notes Pro update',
      '--yes-label',
      'Install now',
      '--no-label',
      'Skip this version',
      '--cancel-label',
      'Not right now',
      '--yesnocancel',
    ]);
    expect(args.at(-1)).toBe(asQtPlainText(MESSAGE));
    expect(asQtPlainText('<b>&"\'')).toBe('<qt><p style="white-space:pre-wrap">&#60;b&#62;&#38;&#34;&#39;</p></qt>');
  });

  it.each([
    ['zenity Install now', 'linux', ok(''), 'install'],
    ['zenity extra button', 'linux', ok('Skip this version\n', 1), 'skip'],
    ['zenity closed', 'linux', ok('', 1), 'later'],
    ['zenity timeout', 'linux', ok('', 5), 'later'],
    ['kdialog Install now', 'linux-kde', ok('', 0), 'install'],
    ['kdialog closed', 'linux-kde', ok('', 2), 'later'],
    ['osascript Escape', 'darwin', ok('Not right now\n'), 'later'],
    ['PowerShell window closed', 'win32', ok('later\r\n'), 'later'],
  ] as const)('reads the answer: %s', async (_label, os, result, choice) => {
    const onPath: Record<string, string> = os === 'linux' ? { zenity: '/usr/bin/zenity' } : { kdialog: '/usr/bin/kdialog' };
    const commands = new FakeCommands(() => result, onPath);
    const realOs = os === 'linux-kde' ? 'linux' : os;
    expect(await promptWith(realOs, commands, { env: { DISPLAY: ':0' } }).ask(OFFER)).toBe(choice);
  });

  it.each([
    ['no GUI session for osascript', 'darwin', async () => ok('', 1)],
    ['a dialog tool that cannot start', 'win32', async () => Promise.reject(Object.assign(new Error('spawn ENOENT'), { code: 'ENOENT' }))],
    ['zenity failing to open the display', 'linux', async () => ok('', 255)],
  ] as const)('falls back to the terminal: %s', async (_label, os, answer) => {
    const input = new PassThrough();
    let written = '';
    const terminal = () => ({ input, write: (t: string) => void (written += t), close: () => undefined });
    const prompt = promptWith(os, new FakeCommands(answer, { zenity: '/usr/bin/zenity' }), { env: { DISPLAY: ':0' }, terminal });
    input.end('i\n');
    expect(await prompt.ask(OFFER)).toBe('install');
    expect(written).toContain('Install now [i], not right now [n], skip this version [s]? ');
  });

  it('without a desktop, a dialog tool or a terminal: Not right now, without running anything', async () => {
    const commands = new FakeCommands(() => ok(''), { zenity: '/usr/bin/zenity' });
    expect(await promptWith('linux', commands, { env: {} }).ask(OFFER)).toBe('later');
    expect(commands.calls).toEqual([]);
  });
});

describe('the terminal', () => {
  const ask = async (typed: string | null, offer = OFFER) => {
    const input = new PassThrough();
    let written = '';
    if (typed === null) input.end();
    else input.end(typed);
    return { choice: await askAtTerminal(offer, { input, write: (t) => void (written += t), close: () => undefined }), written };
  };

  it.each([
    ['i\n', 'install'],
    ['Install\n', 'install'],
    ['s\n', 'skip'],
    ['n\n', 'later'],
    ['\n', 'later'],
    ['whatever\n', 'later'],
  ])('reads %j as %s', async (typed, choice) => {
    expect((await ask(typed)).choice).toBe(choice);
  });

  it('takes the end of input as Not right now', async () => {
    expect((await ask(null)).choice).toBe('later');
  });

  it('shows the notes with their line breaks, and control characters as escapes rather than obeyed', async () => {
    const { written } = await ask('n\n', { ...OFFER, releaseNotes: 'line 1\nline 2\x1b[2J\x07 end' });
    expect(written).toContain('line 1\nline 2\\x1b[2J\\x07 end');
    expect(written).not.toContain('\x1b');
  });
});

describe('checking while a check runs', () => {
  it('answers both callers with the one check', async () => {
    const world = await new UpdateWorld().start();
    try {
      world.authority.push = pushOf(world.packages, Buffer.from('console.log("v2")\n'));
      const prompt = new ScriptedPrompt(['later']);
      const updater = await world.launch({ prompt });
      const [first, second] = await Promise.all([updater.checkInBackground(), updater.checkInBackground()]);
      expect(second).toBe(first);
      expect(prompt.offers).toHaveLength(1);
      expect(world.authority.requests.filter((r) => r.path === '/v1/updates/check')).toHaveLength(1);
    } finally {
      await world.close();
    }
  });
});
