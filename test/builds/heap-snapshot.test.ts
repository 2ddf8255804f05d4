/**
 * Issue 20 item 8, in what customers run: inside a protected linux-x64 executable (its pinned Node and
 * the sodium-native it carries), the runtime token is in the heap at most once while the app runs.
 * The protected app writes a heap snapshot of its own process; every runtime token in it is found by
 * shape (a compact JWS whose header names the runtime-token type) and each copy counted by its
 * signature, which no other string contains.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_TYPES } from '../../runtime-sdk/protocol.js';
import { zipOf } from './archives.js';
import { downloadPackage, protectionWorld, runProtected, settled, uploadBuild } from './support.js';

const { o, licenseKey, work, home } = await protectionWorld('heap', { platforms: ['linux-x64'] });

/**
 * Waits for the engine's start-up calls to finish, then snapshots its own heap (a full GC runs
 * first). With HOLD_TOKEN_OF (a license key) and HOLD_TOKEN_AT (the authority) it first activates a
 * made-up device itself and keeps that token: the control that shows a held token is found.
 */
const SNAPSHOTTING_APP = {
  'package.json': JSON.stringify({ name: 'heap-app', version: '1.0.0', main: 'main.js' }),
  'main.js': [
    "'use strict';",
    "const { writeHeapSnapshot } = require('node:v8');",
    'async function holdToken() {',
    '  if (!process.env.HOLD_TOKEN_OF) return null;',
    "  const body = JSON.stringify({ license_key: process.env.HOLD_TOKEN_OF, device_fingerprint: 'e'.repeat(64) });",
    "  const res = await fetch(process.env.HOLD_TOKEN_AT + '/v1/licenses/activate', { method: 'POST', headers: { 'content-type': 'application/json' }, body });",
    '  return (await res.json()).token;',
    '}',
    'holdToken().then((held) => setTimeout(() => {',
    '  writeHeapSnapshot(process.env.HEAP_SNAPSHOT_FILE);',
    "  console.log('snapshot written', typeof held);",
    '}, 1000));',
  ].join('\n'),
};

/** Copies of each runtime token in the snapshot, by signature; the snapshot is removed. */
function runtimeTokenCopies(snapshotFile: string): number[] {
  const text = fs.readFileSync(snapshotFile, 'utf8');
  fs.rmSync(snapshotFile);
  const signatures = new Set<string>();
  for (const [, header, signature] of text.matchAll(/(eyJ[A-Za-z0-9_-]+)\.eyJ[A-Za-z0-9_-]+\.([A-Za-z0-9_-]{86})/g)) {
    const { typ } = JSON.parse(Buffer.from(header!, 'base64url').toString('utf8')) as { typ?: string };
    if (typ === DOCUMENT_TYPES.runtimeToken) signatures.add(signature!);
  }
  return [...signatures].map((signature) => text.split(signature).length - 1);
}

describe('the runtime token in a protected executable', () => {
  let executable: string;

  beforeAll(async () => {
    const build = await settled(o, (await uploadBuild(o, { data: new Uint8Array(await zipOf(SNAPSHOTTING_APP)), name: 'app.zip' }, { platform: 'linux-x64' })).id);
    expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'single_executable', protection_level: 'encrypted' });
    executable = await downloadPackage(o, build as any, work);
  }, 180_000);

  const snapshotOf = async (user: string, env: Record<string, string>): Promise<number[]> => {
    const snapshot = path.join(user, 'run.heapsnapshot');
    const run = await runProtected(executable, { home: user, env: { ...env, HEAP_SNAPSHOT_FILE: snapshot } });
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(/^snapshot written/);
    return runtimeTokenCopies(snapshot);
  };

  it('is held at most once at the first start (activation) and at a start from the cache', async () => {
    const user = home();
    for (const env of [{ LATCHKEY_LICENSE_KEY: licenseKey }, {}] as Record<string, string>[]) {
      for (const copies of await snapshotOf(user, env)) expect(copies).toBeLessThanOrEqual(1);
    }
  });

  it('is found when the app holds one itself: the count sees tokens in the heap', async () => {
    const counts = await snapshotOf(home(), { LATCHKEY_LICENSE_KEY: licenseKey, HOLD_TOKEN_OF: licenseKey, HOLD_TOKEN_AT: o.server.url });
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(1);
  });
});
