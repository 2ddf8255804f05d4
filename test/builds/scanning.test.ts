import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EICAR_SIGNATURE } from '../../server/builds/scanning/eicar.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGzOf, zipOf } from './archives.js';
import { FakeClamd } from './fake-clamd.js';
import { filesOf, owner, settled, uploadBuild, type Owner } from './support.js';

let server: TestServer;
let o: Owner;
beforeAll(async () => {
  server = await startTestServer();
  o = await owner(server);
});
afterAll(() => server.close());

async function scanned(owner: Owner, data: Buffer | string, name: string) {
  const build = await settled(owner, (await uploadBuild(owner, { data: typeof data === 'string' ? data : new Uint8Array(data), name })).id);
  return build;
}

/** A zip whose end record names disk 1: a split archive, which yauzl refuses to read. */
async function multiDiskZip(): Promise<Buffer> {
  const zip = Buffer.from(await zipOf({ 'a.txt': 'hello' }));
  zip.writeUInt16LE(1, zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06])) + 4);
  return zip;
}

describe('the built-in scanners', () => {
  const cases: [string, () => Promise<Buffer | string>, string, 'INFECTED' | 'REJECTED', string][] = [
    [
      'a zip entry climbing out with ../',
      () => zipOf({ 'xx/evil.sh': 'rm -rf /' }, { rename: { 'xx/': '../' } }),
      'app.zip',
      'REJECTED',
      'archive entry "../evil.sh" points outside the archive (..)',
    ],
    [
      'a zip entry with an absolute path',
      () => zipOf({ 'xetc/passwd': 'root' }, { rename: { xetc: '/etc' } }),
      'app.zip',
      'REJECTED',
      'archive entry "/etc/passwd" has an absolute path',
    ],
    ['a zip bomb', () => zipOf({ 'zeros.bin': Buffer.alloc(40 * 1024 * 1024) }), 'app.zip', 'REJECTED', 'expands past 100 times its size'],
    ['a tar.gz entry climbing out with ../', async () => tarGzOf([['pkg/../../evil.sh', 'x']]), 'app.tar.gz', 'REJECTED', 'points outside the archive'],
    ['a tar.gz bomb', async () => tarGzOf([['zeros.bin', Buffer.alloc(40 * 1024 * 1024)]]), 'app.tar.gz', 'REJECTED', 'a decompression bomb'],
    ['the EICAR test file', async () => Buffer.concat([EICAR_SIGNATURE, Buffer.from('\n')]), 'eicar.com', 'INFECTED', 'the EICAR test signature was found in eicar.com'],
    [
      'the EICAR test signature across two 1 MiB reads',
      async () => Buffer.concat([Buffer.alloc(1024 * 1024 - 30, 'a'), EICAR_SIGNATURE]),
      'big.bin',
      'INFECTED',
      'found in big.bin',
    ],
    ['the EICAR test file inside a zip', () => zipOf({ 'package.json': '{}', 'lib/test.txt': EICAR_SIGNATURE }), 'app.zip', 'INFECTED', 'found in app.zip: lib/test.txt'],
    [
      'a gzip that is not a tar',
      async () => (await import('node:zlib')).gzipSync('just text, no tar headers '.repeat(40)),
      'notes.gz',
      'REJECTED',
      'the tar.gz archive cannot be read',
    ],
    [
      'the EICAR test file in a zip inside a zip',
      async () => zipOf({ 'package.json': '{}', 'lib/inner.zip': await zipOf({ 'eicar.txt': EICAR_SIGNATURE }) }),
      'app.zip',
      'INFECTED',
      'found in app.zip: lib/inner.zip: eicar.txt',
    ],
    [
      'the EICAR test file in a zip inside a tar.gz',
      async () => tarGzOf([['vendor/inner.zip', await zipOf({ 'x/eicar.com': EICAR_SIGNATURE })]]),
      'app.tar.gz',
      'INFECTED',
      'found in app.tar.gz: vendor/inner.zip: x/eicar.com',
    ],
    [
      'the EICAR test file in a tar.gz inside a zip',
      async () => zipOf({ 'deps.tgz': tarGzOf([['eicar.com', EICAR_SIGNATURE]]) }),
      'app.zip',
      'INFECTED',
      'found in app.zip: deps.tgz: eicar.com',
    ],
    [
      'the EICAR test file gzipped inside a zip',
      async () => zipOf({ 'notes.txt.gz': gzipSync(EICAR_SIGNATURE) }),
      'app.zip',
      'INFECTED',
      'found in app.zip: notes.txt.gz: notes.txt',
    ],
    [
      'the EICAR test file four archives deep',
      async () => zipOf({ 'a.zip': await zipOf({ 'b.zip': await zipOf({ 'c.zip': await zipOf({ 'eicar.txt': EICAR_SIGNATURE }) }) }) }),
      'app.zip',
      'INFECTED',
      'found in app.zip: a.zip: b.zip: c.zip: eicar.txt',
    ],
    [
      'archives nested five deep',
      async () => zipOf({ 'a.zip': await zipOf({ 'b.zip': await zipOf({ 'c.zip': await zipOf({ 'd.zip': await zipOf({ 'x.txt': 'x' }) }) }) }) }),
      'app.zip',
      'REJECTED',
      'app.zip: a.zip: b.zip: c.zip: d.zip is an archive nested more than 4 levels deep',
    ],
    [
      'a zip bomb inside a zip (one budget for all levels)',
      async () => zipOf({ 'inner.zip': await zipOf({ 'zeros.bin': Buffer.alloc(40 * 1024 * 1024) }) }),
      'app.zip',
      'REJECTED',
      'app.zip: inner.zip: the archive expands past 100 times its size',
    ],
    [
      // Big enough that the parser waits on the entry that cannot be written: it must be read anyway.
      'a tar.gz holding a file and, after it, an entry inside it',
      async () =>
        tarGzOf([
          ['a', 'x'],
          ['a/b', Buffer.alloc(200_000, 1)],
          ['c', Buffer.alloc(2_000_000, 2)],
        ]),
      'app.tar.gz',
      'REJECTED',
      'archive entry "a/b" is inside "a", which the archive also holds as a file',
    ],
    [
      'a tar.gz holding an entry inside a folder and then a file of that name',
      async () =>
        tarGzOf([
          ['a/b', 'y'],
          ['a', 'x'],
        ]),
      'app.tar.gz',
      'REJECTED',
      'archive entry "a" is a file, and a folder of other entries',
    ],
    [
      'a zip holding a file and an entry inside it',
      () => zipOf({ a: 'x', 'a/b': 'y' }),
      'app.zip',
      'REJECTED',
      'archive entry "a/b" is inside "a", which the archive also holds as a file',
    ],
    ['a zip that says it spans several disks', async () => multiDiskZip(), 'app.zip', 'REJECTED', 'the zip cannot be read'],
    [
      'a damaged zip inside a zip',
      async () => zipOf({ 'inner.zip': Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(100, 7)]) }),
      'app.zip',
      'REJECTED',
      'app.zip: inner.zip: the zip cannot be read',
    ],
  ];

  it.each(cases)('fails %s, with the reason, and removes its files', async (_name, make, fileName, scanStatus, reason) => {
    const build = await scanned(o, await make(), fileName);
    expect(build).toMatchObject({ status: 'FAILED', scan_status: scanStatus, package_format: null, sha256: null });
    expect(build.failure_reason).toContain(reason);
    expect(filesOf(server, build.id)).toEqual([]);
  });

  it('pass clean nested archives (a zip and a gzipped file in a tar.gz), delivered as uploaded', async () => {
    const tar = tarGzOf([
      ['docs/manual.zip', await zipOf({ 'manual.txt': 'read me' })],
      ['data/table.json.gz', gzipSync('{"rows":[]}')],
    ]);
    const build = await scanned(o, tar, 'tool.tar.gz');
    expect(build).toMatchObject({ status: 'READY', scan_status: 'CLEAN', package_format: 'as_uploaded' });
  });

  it('pass a clean archive that is not a JavaScript app, delivered as uploaded', async () => {
    const zip = await zipOf({ 'README.txt': 'hello', 'bin/tool': Buffer.alloc(1000, 1) });
    const build = await scanned(o, zip, 'tool.zip');
    expect(build).toMatchObject({ status: 'READY', scan_status: 'CLEAN', package_format: 'as_uploaded' });
  });
});

describe('clamd, when configured', () => {
  let clamd: FakeClamd;
  let scanning: TestServer;
  let c: Owner;
  beforeAll(async () => {
    clamd = await new FakeClamd('FAKE-VIRUS-MARKER').start();
    scanning = await startTestServer({ env: { LATCHKEY_CLAMD_ADDRESS: clamd.address } });
    c = await owner(scanning);
  });
  afterAll(async () => {
    await scanning.close();
    await clamd.close();
  });

  it('receives every artifact through INSTREAM, exactly as uploaded', async () => {
    const data = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 256));
    const build = await scanned(c, data, 'tool.bin');
    expect(build).toMatchObject({ status: 'READY', scan_status: 'CLEAN' });
    expect(clamd.scanned.some((s) => s.equals(data))).toBe(true);
  });

  it('fails an artifact it finds a signature in', async () => {
    const build = await scanned(c, 'harmless text FAKE-VIRUS-MARKER more text', 'notes.txt');
    expect(build).toMatchObject({ status: 'FAILED', scan_status: 'INFECTED', failure_reason: 'ClamAV found Fake.Test.Signature in notes.txt' });
  });

  it('retries the build while clamd is down, rather than passing it unscanned', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const down = await startTestServer({ env: { LATCHKEY_CLAMD_ADDRESS: `127.0.0.1:${port}` } });
    try {
      const d = await owner(down);
      const build = await uploadBuild(d, { data: 'console.log(1)', name: 'main.js' });
      const db = down.database.db;
      let job;
      do {
        await new Promise((r) => setTimeout(r, 100));
        job = await db('jobs').whereRaw(`payload->>'build_id' = ?`, [build.id]).first();
      } while (!job?.last_error);
      expect(job).toMatchObject({ attempts: 1, locked_by: null });
      expect(job.last_error).toContain('clamd is unavailable');
      expect((await db('builds').where({ id: build.id }).first()).status).toBe('PROCESSING');
      // The last attempt fails for good, with the reason.
      await db('jobs')
        .where({ id: job.id })
        .update({ attempts: job.max_attempts - 1, run_after: db.fn.now() });
      const failed = await settled(d, build.id);
      expect(failed).toMatchObject({ status: 'FAILED', scan_status: 'PENDING' });
      expect(failed.failure_reason).toMatch(/^processing failed: clamd is unavailable: connect ECONNREFUSED/);
    } finally {
      await down.close();
    }
  });
});
