import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../runtime-sdk/index.js';
import { FakeAuthority } from '../support/fake-authority.js';
import { tempDir } from '../support/fake-machine.js';
import { PackageServer } from '../support/package-server.js';
import { appSource, REPO_ROOT, runApp } from '../support/self-update-world.js';
import type { SelfUpdateConfig } from '../support/self-updating-app.js';
import { pushOf } from '../support/updater-harness.js';

const KEY = 'SELF-2345-6789-ABCD';

let authority: FakeAuthority;
let packages: PackageServer;
let installDir: string;
let dataDir: string;

beforeAll(async () => {
  authority = await new FakeAuthority(systemClock).start();
  packages = await new PackageServer().start();
  authority.addLicense(KEY);
  installDir = tempDir('latchkey-self-install-');
  dataDir = tempDir('latchkey-self-data-');
});
afterAll(async () => {
  await Promise.all([authority.close(), packages.close()]);
  for (const dir of [installDir, dataDir]) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a real process that replaces and restarts itself', () => {
  it('v1 installs v2 over its own file, exits, and v2 starts with the same arguments and reports it installed', async () => {
    const appFile = path.join(installDir, 'app.mjs');
    fs.writeFileSync(appFile, appSource('1.0.0', 'bld_v1'), { mode: 0o640 });
    authority.push = pushOf(packages, Buffer.from(appSource('2.0.0', 'bld_v2')));
    const resultFile = path.join(dataDir, 'result.json');
    const config: SelfUpdateConfig = { serverUrl: authority.url, appId: authority.appId, publicKeys: authority.publicKeys, key: KEY, dataDir, resultFile };

    // v1 runs v2 in its place, on its own output pipes, and exits once v2 has.
    const { code: exitCode, output } = await runApp(appFile, ['first', 'second argument'], config);

    expect(exitCode).toBe(0);
    expect(output).toContain('1.0.0 running with ["first","second argument"]');
    expect(output).toContain('2.0.0 running with ["first","second argument"]');
    expect(JSON.parse(fs.readFileSync(resultFile, 'utf8'))).toEqual({
      version: '2.0.0',
      args: ['first', 'second argument'],
      cwd: REPO_ROOT,
      started: 'installed',
      outcome: 'no-update',
    });
    expect(fs.readFileSync(appFile, 'utf8')).toBe(appSource('2.0.0', 'bld_v2'));
    expect(fs.statSync(appFile).mode & 0o7777).toBe(0o640);
    const old = fs.readdirSync(installDir).filter((name) => name.startsWith('app.mjs.old.'));
    expect(old).toHaveLength(1);
    expect(fs.readFileSync(path.join(installDir, old[0]!), 'utf8')).toBe(appSource('1.0.0', 'bld_v1'));
    expect(authority.updateReports).toMatchObject([{ event: 'installed', build_id: 'bld_v2', version: '2.0.0' }]);
  });

  it('a command-line app: the new version runs on the same stdin and stdout, and its exit code is the exit code', async () => {
    const appFile = path.join(installDir, 'cli.mjs');
    fs.writeFileSync(appFile, appSource('1.0.0', 'bld_v1'), { mode: 0o640 });
    authority.push = pushOf(packages, Buffer.from(appSource('2.0.0', 'bld_v2')), { serial: 8 });
    const config: SelfUpdateConfig = {
      serverUrl: authority.url,
      appId: authority.appId,
      publicKeys: authority.publicKeys,
      key: KEY,
      dataDir: tempDir('latchkey-self-data-'),
      resultFile: path.join(dataDir, 'cli-result.json'),
      echoStdinThenExit: 7,
    };
    try {
      const { code, output } = await runApp(appFile, ['--stdin'], config, 'the line typed for the app\n');
      expect(code).toBe(7);
      expect(output).toContain('2.0.0 running with ["--stdin"]');
      expect(output).toContain('read from stdin: the line typed for the app');
    } finally {
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    }
  });
});
