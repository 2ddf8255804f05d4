/**
 * The install lock in the updater's folder: a lock whose owner is gone (its pid no longer runs, or
 * the file was not refreshed for minutes) is taken over; one a running instance holds is left alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_FILE_NAME, STALE_AFTER_MS } from '../../../runtime-sdk/updates/install-lock.js';
import { pushOf, ScriptedPrompt, UpdateWorld, v2Content } from '../support/updater-harness.js';

let world: UpdateWorld;
let holder: ChildProcess | undefined;
afterEach(async () => {
  holder?.kill();
  holder = undefined;
  await world.close();
});

const lockFile = () => path.join(world.dataDir, 'updates', LOCK_FILE_NAME);

function writeLock(pid: number, ageMs = 0): void {
  fs.mkdirSync(path.dirname(lockFile()), { recursive: true });
  fs.writeFileSync(lockFile(), JSON.stringify({ pid, host: os.hostname(), nonce: 'other' }), { mode: 0o600 });
  const at = new Date(Date.now() - ageMs);
  fs.utimesSync(lockFile(), at, at);
}

/** A process that runs until killed, and one that has already exited. */
function runningProcess(): number {
  holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return holder.pid!;
}
async function exitedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

async function installingWorld() {
  world = await new UpdateWorld({ app: 'notes', executable: true }).start();
  world.authority.push = pushOf(world.packages, Buffer.from(v2Content(true)));
}

describe('the install lock', () => {
  it('left by an instance that is gone: taken over, the update installed, the lock removed after', async () => {
    await installingWorld();
    writeLock(await exitedPid());
    const outcome = await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground();
    expect(outcome).toMatchObject({ status: 'restarting' });
    expect(fs.readFileSync(world.appFile, 'utf8')).toBe(v2Content(true));
    expect(fs.existsSync(lockFile())).toBe(false);
  });

  it('not refreshed for longer than it may be: taken over even if its pid runs (reused, or another host)', async () => {
    await installingWorld();
    writeLock(runningProcess(), STALE_AFTER_MS + 60_000);
    expect(await (await world.launch({ prompt: new ScriptedPrompt(['install']) })).checkInBackground()).toMatchObject({ status: 'restarting' });
  });

  it('held by a running instance: the start leaves what it guards alone and says so', async () => {
    await installingWorld();
    writeLock(runningProcess());
    expect(await (await world.launch()).start()).toBe('busy');
    expect(JSON.parse(fs.readFileSync(lockFile(), 'utf8'))).toMatchObject({ nonce: 'other' });
    holder!.kill();
    await new Promise((resolve) => holder!.once('exit', resolve));
    expect(await (await world.launch()).start()).toBe('none');
  });
});
