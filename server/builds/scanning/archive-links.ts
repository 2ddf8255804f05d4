import fs from 'node:fs/promises';
import path from 'node:path';
import { ScanRefusal } from './findings.js';

/** A symbolic link in an archive: its path inside the archive (`/`-separated, checked) and its target as written. */
export interface ArchiveLink {
  name: string;
  target: string;
}

/** Longer targets are refused: no real link needs them, and each is followed by hand. */
const MAX_TARGET_LENGTH = 4096;
/** Links followed from one link before it counts as a loop (Linux's own limit is 40). */
const MAX_HOPS = 40;

/**
 * A link that leaves the archive (or loops, or hides other entries behind it): refused at upload,
 * and by the build's job for archives nested in the upload. Its own class, so that the upload's
 * quick check can tell it from refusals the job reports as it always has.
 */
export class ArchiveLinkRefusal extends ScanRefusal {
  constructor(reason: string) {
    super({ scan_status: 'REJECTED', reason });
  }
}

const shown = (name: string) => JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}...` : name);

/**
 * Where `link` leads, followed through the archive's other links as the operating system would,
 * as a path inside the archive; refused when any step leaves the archive's top folder: an absolute
 * target, `..` past the top, or a link reached on the way that does either.
 */
function resolveLink(link: ArchiveLink, links: Map<string, string>): string {
  const refuse = (why: string) => new ArchiveLinkRefusal(`archive entry ${shown(link.name)} is a symlink to ${shown(link.target)}, which ${why}`);
  const resolved: string[] = [];
  let pending = [...link.name.split('/').slice(0, -1), ...link.target.split('/')];
  if (link.target.startsWith('/') || /^[A-Za-z]:/.test(link.target)) throw refuse('is an absolute path: only links inside the archive are accepted');
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (resolved.length === 0) throw refuse(hops === 0 ? 'points outside the archive (..)' : 'points outside the archive through another symlink');
      resolved.pop();
      continue;
    }
    resolved.push(part);
    const next = links.get(resolved.join('/'));
    if (next === undefined) continue;
    if (++hops > MAX_HOPS) throw refuse(`goes through more than ${MAX_HOPS} symlinks (a loop)`);
    if (next.startsWith('/') || /^[A-Za-z]:/.test(next)) throw refuse(`goes through the symlink ${shown(resolved.join('/'))} to the absolute path ${shown(next)}`);
    resolved.pop();
    pending = [...next.split('/'), ...pending];
  }
  return resolved.join('/');
}

/**
 * Checks an archive's links against each other and its other entries (`entries`: files and
 * folders); throws an `ArchiveLinkRefusal` naming the first bad one. Links that stay inside are
 * accepted (`node_modules/.bin/x -> ../x/cli.js`).
 */
export function checkLinks(links: ArchiveLink[], entries: Iterable<string>): void {
  const byName = new Map<string, string>();
  for (const link of links) {
    const target = link.target.replace(/\\/g, '/');
    if (target === '' || target.length > MAX_TARGET_LENGTH || target.includes('\0')) {
      throw new ArchiveLinkRefusal(`archive entry ${shown(link.name)} is a symlink with an empty, overlong or malformed target`);
    }
    if (link.name === '' || byName.has(link.name)) throw new ArchiveLinkRefusal(`archive entry ${shown(link.name)} is a symlink that appears twice`);
    byName.set(link.name, target);
  }
  const isUnderLink = (name: string) => {
    const parts = name.split('/');
    for (let i = 1; i < parts.length; i++) if (byName.has(parts.slice(0, i).join('/'))) return parts.slice(0, i).join('/');
    return null;
  };
  // An entry written through a link would land wherever the link points: refused rather than followed.
  for (const name of [...entries, ...byName.keys()]) {
    const through = isUnderLink(name);
    if (through !== null) throw new ArchiveLinkRefusal(`archive entry ${shown(name)} is inside ${shown(through)}, which is a symlink`);
  }
  for (const name of entries) if (byName.has(name)) throw new ArchiveLinkRefusal(`archive entry ${shown(name)} is both a symlink and a file or folder`);
  for (const [name, target] of byName) resolveLink({ name, target }, byName);
}

/** Makes the checked links under `dest`, as written (relative), once every file is in place. */
export async function placeLinks(dest: string, links: ArchiveLink[]): Promise<void> {
  for (const link of links) {
    const file = path.join(dest, ...link.name.split('/'));
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.symlink(link.target.replace(/\\/g, '/'), file);
  }
}
