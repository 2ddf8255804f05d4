import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ArtifactUnpacker } from '../../server/builds/scanning/archive.js';
import { tarGzOf, zipOf } from './archives.js';

// A job's signal (the runner stopping, a lease lost) stops an unpack under way: the unpack rejects
// with the signal's reason, not a refusal of the archive, and only once nothing it started still
// writes, so the job's scratch folder can be removed at once and stays removed.

const scratch = mkdtempSync(path.join(tmpdir(), 'latchkey-unpack-abort-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** 40 files of 512 KiB of random bytes: gzip cannot shrink them, so unpacking takes many writes. */
const entries = Array.from({ length: 40 }, (_, i) => [`app/file-${i}.bin`, randomBytes(512 * 1024)] as [string, Buffer]);

/** 3,000 small files, each in a folder of its own: many entries the tar parser has queued when the abort comes. */
const folders = Array.from({ length: 3000 }, (_, i) => [`app/d${i}/f.txt`, `file ${i}`] as [string, string]);

const archives = {
  zip: { kind: 'zip', bytes: async () => zipOf(Object.fromEntries(entries)), count: entries.length },
  'tar.gz': { kind: 'tar.gz', bytes: async () => tarGzOf(entries), count: entries.length },
  'tar.gz of many folders': { kind: 'tar.gz', bytes: async () => tarGzOf(folders), count: folders.length },
} as const;

/** Every file under `dir`, relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);

/** Files under `dir` this process still holds open (Linux's /proc). */
const openUnder = (dir: string): string[] =>
  readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(`${dir}/`) ? [target] : [];
    } catch {
      return []; // closed meanwhile
    }
  });

describe.each(Object.keys(archives) as (keyof typeof archives)[])('unpacking a %s when the job is stopped', (name) => {
  const { kind, bytes, count } = archives[name];
  const label = name.replace(/\W+/g, '-');
  it('rejects with the reason once the first file is being written, writes no more, and leaves a folder that can be removed', async () => {
    const artifact = path.join(scratch, `artifact-${label}`);
    writeFileSync(artifact, await bytes());
    const dest = path.join(scratch, `unpacked-${label}`);
    const stop = new AbortController();
    const reason = new Error('runner stopping');
    // Stopped as soon as the first file appears: the other 39 are still to come.
    const watch = setInterval(() => {
      try {
        if (readdirSync(path.join(dest, 'app')).length > 0) stop.abort(reason);
      } catch {
        // not made yet
      }
    }, 1);
    try {
      const unpacker = await ArtifactUnpacker.of(artifact, stop.signal);
      await expect(unpacker.unpack(artifact, kind, dest)).rejects.toBe(reason);
    } finally {
      clearInterval(watch);
    }
    // Settled only once every file it opened is closed again.
    expect(openUnder(dest)).toEqual([]);
    expect(filesUnder(dest).length).toBeLessThan(count);
    rmSync(dest, { recursive: true });
    // Nothing the unpack started brings the folder back.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(() => readdirSync(dest)).toThrow(/ENOENT/);
  });

  it('starts nothing with a signal already stopped', async () => {
    const artifact = path.join(scratch, `artifact-${label}-early`);
    writeFileSync(artifact, await bytes());
    const dest = path.join(scratch, `unpacked-${label}-early`);
    const reason = new Error('lease lost');
    const unpacker = await ArtifactUnpacker.of(artifact, AbortSignal.abort(reason));
    await expect(unpacker.unpack(artifact, kind, dest)).rejects.toBe(reason);
    expect(filesUnder(dest)).toEqual([]);
  });
});
