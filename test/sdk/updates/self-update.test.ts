import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../runtime-sdk/index.js';
import { FakeAuthority } from '../support/fake-authority.js';
import { tempDir } from '../support/fake-machine.js';
import { PackageServer } from '../support/package-server.js';
import type { SelfUpdateConfig } from '../support/self-updating-app.js';
import { pushOf } from '../support/updater-harness.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const RUNNER = path.join(REPO_ROOT, 'test/sdk/support/self-updating-app.ts');
const KEY = 'SELF-2345-6789-ABCD';
const appSource = (version: string, buildId: string) => `import { runVersion } from ${JSON.stringify(RUNNER)};\nawait runVersion(${JSON.stringify(version)}, ${JSON.stringify(buildId)});\n`;

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

    const v1 = spawn(process.execPath, ['--import', 'tsx', appFile, 'first', 'second argument'], {
      cwd: REPO_ROOT,
      env: { ...process.env, LATCHKEY_SELF_UPDATE: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    v1.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    v1.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exitCode = await new Promise<number | null>((resolve) => v1.once('exit', resolve));
    // v2 inherited v1's output pipes: they close once v2 is done too.
    await new Promise((resolve) => v1.stdout.once('close', resolve));

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
});
