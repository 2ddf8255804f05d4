import { randomHex } from '../crypto/secrets.js';

/**
 * Where a build's objects live in storage: under `apps/<app>/builds/<build>/`, so deleting a build,
 * or an app with all its builds, removes one prefix. A package gets a fresh key on every write: a
 * download in progress keeps reading the object it opened while a replacement lands beside it.
 */
export const buildFiles = {
  ofApp: (appId: string) => `apps/${appId}`,
  prefix: (b: BuildRef) => `apps/${b.app_id}/builds/${b.id}`,
  artifact: (b: BuildRef) => `apps/${b.app_id}/builds/${b.id}/artifact`,
  newPackage: (b: BuildRef) => `apps/${b.app_id}/builds/${b.id}/package-${randomHex(6)}`,
};

interface BuildRef {
  id: string;
  app_id: string;
}

const UNSAFE = /[^A-Za-z0-9._-]+/g;

/** A file name safe everywhere it appears (a folder on the server, a Content-Disposition): the last path part, plain characters. */
export function safeFileName(name: string, fallback = 'artifact'): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const cleaned = base
    .replace(UNSAFE, '_')
    .replace(/^[._]+/, '')
    .slice(0, 128);
  return cleaned || fallback;
}

/** The download's file name: `notes-pro-1.2.0-linux-x64`, with `.exe` or `.mjs` where it needs one. */
export function packageFileName(appName: string, version: string | null, platform: string, extension: string): string {
  const slug =
    appName
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'app';
  return safeFileName(`${[slug, version, platform].filter(Boolean).join('-')}${extension}`);
}
