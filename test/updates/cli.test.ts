import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Owner } from '../builds/support.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { licensedDevice, proOwner, readyBuild, type Device } from './support.js';
import { runLatchkey } from '../support/cli.js';

let server: TestServer;
let o: Owner;
let device: Device;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  o = await proOwner(server);
  device = await licensedDevice(o);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-updates-'));
});
afterAll(async () => {
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const latchkey = (args: string[]) => runLatchkey(server.url, o.dev.apiKey, args);

// Each case starts the real executable: generous time, no timing asserted.
describe('latchkey updates', { timeout: 120_000 }, () => {
  it('push, status and clear an app push', async () => {
    const build = await readyBuild(o, { version: '2.0.0' });
    const notes = path.join(dir, 'notes.txt');
    fs.writeFileSync(notes, 'Faster sync.\nFewer bugs.\n');
    const pushed = await latchkey(['updates', 'push', '--app', o.app.id, '--notes-file', notes]);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(pushed.stdout).toMatch(new RegExp(`^target_build_id\\s+${build.id}$`, 'm'));
    expect(pushed.stdout).toMatch(/^pending\s+1$/m);
    expect(pushed.stdout).toMatch(/^complete\s+no$/m);
    expect(pushed.stdout).toContain('Release notes:\nFaster sync.\nFewer bugs.\n');

    const status = await latchkey(['updates', 'status', '--app', o.app.id, '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ app_id: o.app.id, push: { target_build_id: build.id, version: '2.0.0' } });

    expect(await latchkey(['updates', 'clear', '--app', o.app.id])).toMatchObject({ code: 0, stdout: `Cleared the push of app ${o.app.id}\n` });
    expect((await latchkey(['updates', 'status', '--app', o.app.id])).stdout).toBe(`No active push for app ${o.app.id}\n`);
  });

  it('`latchkey push` is `updates push`; clear --json answers what status answers then', async () => {
    const build = await readyBuild(o, { version: '2.1.0' });
    const pushed = await latchkey(['push', '--app', o.app.id, '--build', build.id, '--notes', 'Short form', '--json']);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(JSON.parse(pushed.stdout)).toMatchObject({ app_id: o.app.id, push: { target_build_id: build.id, release_notes: 'Short form' } });
    const cleared = await latchkey(['updates', 'clear', '--app', o.app.id, '--json']);
    expect(JSON.parse(cleared.stdout)).toEqual({ app_id: o.app.id, push: null });
    expect(JSON.parse((await latchkey(['updates', 'status', '--app', o.app.id, '--json'])).stdout)).toEqual({ app_id: o.app.id, push: null });
  });

  it('pushes to one license, and reports what it refuses', async () => {
    const build = await readyBuild(o);
    const pushed = await latchkey(['updates', 'push', '--license', device.license_id, '--build', build.id, '--notes', 'For you', '--json']);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(JSON.parse(pushed.stdout)).toMatchObject({ license_id: device.license_id, push: { target_build_id: build.id, release_notes: 'For you' } });

    const both = await latchkey(['updates', 'status', '--app', o.app.id, '--license', device.license_id]);
    expect(both).toMatchObject({ code: 2, stderr: 'latchkey: name either --app or --license\n' });
    const missing = await latchkey(['updates', 'push', '--app', o.app.id, '--build', 'bld_missing']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toBe('latchkey: No such build of this app (BUILD_NOT_FOUND)\n');
  });
});
