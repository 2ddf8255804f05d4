import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { downloadPackage, filesOf, owner, settled, uploadBuild, type Owner } from './support.js';
import { runLatchkey } from '../support/cli.js';

let server: TestServer;
let o: Owner;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  o = await owner(server);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-'));
});
afterAll(async () => {
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const latchkey = (args: string[]) => runLatchkey(server.url, o.dev.apiKey, args);

function file(name: string, content: string | Buffer): string {
  const target = path.join(dir, name);
  fs.writeFileSync(target, content);
  return target;
}

// Each case starts the real executable: generous time, no timing asserted.
describe('latchkey builds', { timeout: 120_000 }, () => {
  it('protect uploads with a progress bar, waits for READY and prints the build; list shows it', async () => {
    const artifact = file('main.js', `console.log('hello');\n${'// padding\n'.repeat(300_000)}`);
    const size = fs.statSync(artifact).size;
    const res = await latchkey(['builds', 'protect', '--app', o.app.id, '--artifact', artifact, '--platform', 'cross_platform', '--python', '3.12', '--version', '1.2.0']);
    expect(res.code, res.stderr).toBe(0);
    // Not a terminal here: one progress line per 10%, ending at 100%.
    const progress = res.stderr.split('\n').filter((l) => l.startsWith('Uploading ['));
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]).toMatch(/^Uploading \[\.{30}\]\s+0%/);
    expect(progress.at(-1)).toBe(`Uploading [${'#'.repeat(30)}] 100%  ${(size / 1e6).toFixed(1)}/${(size / 1e6).toFixed(1)} MB`);
    expect(res.stderr).toMatch(/^Build bld_\w+: QUEUED$/m);
    expect(res.stderr).toMatch(/^Build bld_\w+: READY$/m);
    expect(res.stdout).toMatch(/^status\s+READY$/m);
    expect(res.stdout).toMatch(/^python_version\s+3\.12$/m);
    expect(res.stdout).toMatch(/^version\s+1\.2\.0$/m);
    expect(res.stdout).toMatch(/^package_format\s+javascript_bundle$/m);
    expect(res.stdout).toMatch(/^engine_version\s+1\.0\.0\.0\.0\.178$/m);

    const list = await latchkey(['builds', 'list', '--app', o.app.id]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^BUILD ID\s+STATUS\s+PLATFORM\s+VERSION\s+SCAN\s+PROTECTION\s+PACKAGE\s+SIZE\s+CREATED AT$/);
    expect(lines[1]).toMatch(/^bld_\w+\s+READY\s+cross_platform\s+1\.2\.0\s+CLEAN\s+encrypted\s+javascript_bundle\s+\d+\s+\S+$/);
    expect(lines.at(-1)).toBe('1 of 1 build(s)');
    const json = await latchkey(['builds', 'list', '--app', o.app.id, '--status', 'READY', '--json']);
    expect(JSON.parse(json.stdout)).toHaveLength(1);
  });

  it('protect --json prints the API response; a FAILED build exits 1 with its reason', async () => {
    const res = await latchkey(['builds', 'protect', '--app', o.app.id, '--artifact', file('eicar.com', EICAR_SIGNATURE), '--platform', 'linux-x64', '--json']);
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout)).toMatchObject({ status: 'FAILED', scan_status: 'INFECTED' });
    expect(res.stderr).toMatch(/latchkey: the build failed: the EICAR test signature was found in eicar\.com\n$/);
  });

  it('refuses an unknown platform, a missing file and a server refusal, before or after uploading', async () => {
    const platform = await latchkey(['builds', 'protect', '--app', o.app.id, '--artifact', file('a.js', '1'), '--platform', 'amiga']);
    expect(platform.code).toBe(2);
    expect(platform.stderr).toContain("argument 'amiga' is invalid");
    const missing = await latchkey(['builds', 'protect', '--app', o.app.id, '--artifact', path.join(dir, 'nope.js'), '--platform', 'linux-x64']);
    expect(missing).toMatchObject({ code: 2, stderr: `latchkey: ${path.join(dir, 'nope.js')} is not a readable file\n` });
    const app = await latchkey(['builds', 'protect', '--app', 'app_missing', '--artifact', file('b.js', '1'), '--platform', 'linux-x64']);
    expect(app.code).toBe(4);
    expect(app.stderr).toContain('latchkey: No such app (APP_NOT_FOUND)\n');
  });

  it('upload --no-wait prints the QUEUED build; get shows it; download saves the package and checks its SHA-256', async () => {
    const queued = await latchkey([
      'builds',
      'upload',
      '--app',
      o.app.id,
      '--artifact',
      file('tool.js', "console.log('tool');\n"),
      '--platform',
      'cross_platform',
      '--no-wait',
      '--json',
    ]);
    expect(queued.code, queued.stderr).toBe(0);
    const { id } = JSON.parse(queued.stdout);
    expect(JSON.parse(queued.stdout).status).toBe('QUEUED');
    const build = await settled(o, id);
    expect(build.status).toBe('READY');

    expect(JSON.parse((await latchkey(['builds', 'get', '--app', o.app.id, '--build', id, '--json'])).stdout)).toEqual(build);
    const got = await latchkey(['builds', 'get', '--app', o.app.id, '--build', id]);
    expect(got.stdout).toMatch(new RegExp(`^sha256\\s+${build.sha256}$`, 'm'));

    const expected = fs.readFileSync(await downloadPackage(o, build as { id: string; package_name: string }, fs.mkdtempSync(path.join(dir, 'api-'))));
    const out = path.join(dir, 'saved.mjs');
    const saved = await latchkey(['builds', 'download', '--app', o.app.id, '--build', id, '--out', out]);
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stdout).toBe(`Saved ${out} (${expected.length} bytes, SHA-256 ${build.sha256}, verified)\n`);
    expect(fs.readFileSync(out).equals(expected)).toBe(true);
    expect(createHash('sha256').update(fs.readFileSync(out)).digest('hex')).toBe(build.sha256);

    // A directory as --out: the file takes the package's name; --json tells where and what.
    const into = fs.mkdtempSync(path.join(dir, 'into-'));
    const json = await latchkey(['builds', 'download', '--app', o.app.id, '--build', id, '--out', into, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      file: path.join(into, build.package_name),
      size_bytes: expected.length,
      sha256: build.sha256,
      download_url: expect.stringContaining(`/v1/downloads/${id}?`),
    });
    expect(fs.readdirSync(into)).toEqual([build.package_name]);

    // The stored package altered behind the API's back: the bytes no longer have the build's SHA-256.
    const stored = filesOf(server, id)
      .map((f) => path.join(server.dataDir, 'storage', f))
      .find((f) => fs.readFileSync(f).equals(expected))!;
    fs.writeFileSync(stored, Buffer.concat([Buffer.from('//'), expected.subarray(2)]));
    const tampered = path.join(dir, 'tampered.mjs');
    const refused = await latchkey(['builds', 'download', '--app', o.app.id, '--build', id, '--out', tampered]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`\\nlatchkey: the download's SHA-256 is [0-9a-f]{64}, not the build's ${build.sha256}: nothing was saved; try again\\n$`));
    expect(fs.readdirSync(dir).filter((f) => f.includes('tampered'))).toEqual([]);
  });

  it('download refuses a build that is not READY (5) or does not exist (4), saving nothing', async () => {
    const failed = await settled(o, (await uploadBuild(o, { data: EICAR_SIGNATURE, name: 'eicar.com' })).id);
    expect(failed.status).toBe('FAILED');
    const out = path.join(dir, 'never.bin');
    const notReady = await latchkey(['builds', 'download', '--app', o.app.id, '--build', failed.id, '--out', out]);
    expect(notReady.code).toBe(5);
    expect(notReady.stderr).toMatch(/\(BUILD_NOT_READY\)\n$/);
    const missing = await latchkey(['builds', 'download', '--app', o.app.id, '--build', 'bld_missing', '--out', out]);
    expect(missing).toMatchObject({ code: 4, stderr: 'latchkey: No such build of this app (BUILD_NOT_FOUND)\n' });
    expect(fs.existsSync(out)).toBe(false);
  });
});
