/**
 * Two instances of the app started together, both answering Install now at the same moment: they
 * take turns under the install lock, so the package is fetched once, installed once, and the app's
 * path holds a good v2 with one old copy beside it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../runtime-sdk/index.js';
import { FakeAuthority } from '../support/fake-authority.js';
import { tempDir } from '../support/fake-machine.js';
import { PackageServer } from '../support/package-server.js';
import { appSource, runApp } from '../support/self-update-world.js';
import type { SelfUpdateConfig } from '../support/self-updating-app.js';
import { pushOf } from '../support/updater-harness.js';

const KEY = 'RACE-2345-6789-ABCD';
let authority: FakeAuthority;
let packages: PackageServer;
let work: string;

beforeAll(async () => {
  authority = await new FakeAuthority(systemClock).start();
  packages = await new PackageServer().start();
  authority.addLicense(KEY);
  work = tempDir('latchkey-race-');
});
afterAll(async () => {
  await Promise.all([authority.close(), packages.close()]);
  fs.rmSync(work, { recursive: true, force: true });
});

describe('two instances racing one update', () => {
  it('leave one good install: one download, one swap, one old copy, one installed report', async () => {
    const installDir = path.join(work, 'install');
    const dataDir = path.join(work, 'data');
    const barrier = path.join(work, 'barrier');
    for (const dir of [installDir, dataDir, barrier]) fs.mkdirSync(dir);
    const appFile = path.join(installDir, 'app.mjs');
    fs.writeFileSync(appFile, appSource('1.0.0', 'bld_v1'), { mode: 0o750 });
    const config = (name: string): SelfUpdateConfig => ({
      serverUrl: authority.url,
      appId: authority.appId,
      publicKeys: authority.publicKeys,
      key: KEY,
      dataDir,
      resultFile: path.join(work, `${name}.json`),
      barrier: { dir: barrier, parties: 2 },
    });
    // Activated once beforehand, as an installed app is; no push yet.
    expect((await runApp(appFile, [], config('activation'))).code).toBe(0);

    // A package of a few megabytes: the download takes a while, as real ones do.
    const v2 = appSource('2.0.0', 'bld_v2') + `// ${'x'.repeat(4 * 1024 * 1024)}\n`;
    authority.push = pushOf(packages, Buffer.from(v2));
    const [first, second] = await Promise.all([runApp(appFile, ['one'], config('first')), runApp(appFile, ['two'], config('second'))]);

    expect([first.code, second.code]).toEqual([0, 0]);
    expect(fs.readFileSync(appFile, 'utf8')).toBe(v2);
    const names = fs.readdirSync(installDir).sort();
    expect(names).toEqual(['app.mjs', expect.stringMatching(/^app\.mjs\.old\.\d+$/)]);
    expect(fs.readFileSync(path.join(installDir, names[1]!), 'utf8')).toBe(appSource('1.0.0', 'bld_v1'));
    // One full download, never a second writer of the same file.
    expect(packages.ranges).toEqual([undefined]);
    expect(authority.updateReports).toMatchObject([{ event: 'installed', build_id: 'bld_v2', version: '2.0.0' }]);
    // One instance installed and ran v2 in its place; the other found it installed and ran on.
    const results = ['first', 'second'].map((name) => JSON.parse(fs.readFileSync(path.join(work, `${name}.json`), 'utf8')) as Record<string, unknown>);
    expect(results.map((r) => `${r.version} ${r.outcome}`).sort()).toEqual(['1.0.0 installed', '2.0.0 no-update']);
    // Both were at the question together: the race was real.
    expect(fs.readdirSync(barrier)).toHaveLength(2);
    expect(fs.readdirSync(path.join(dataDir, 'updates')).filter((name) => name.includes('lock'))).toEqual([]);
  });
});
