import fs from 'node:fs';
import path from 'node:path';
import type * as esbuild from 'esbuild';
import { sodiumAddonNotices } from './addon-notices.js';

/**
 * The notices of the open-source code a protected file carries around the developer's app: the
 * runtime engine, which is this project's SDK (Apache-2.0), with what the SDK has built in (its
 * THIRD_PARTY_NOTICES), and every package the engine's bundle took from node_modules (the hardware
 * probes; sodium-native's JavaScript in an executable). Their licences ask that the notice go with
 * every copy, and each copy a customer downloads is one file, so the notices go into it
 * (bundle.ts; native/deliverable adds Node's). The developer's own app and its dependencies are
 * sealed in the vault as the developer bundled them: their notices are the developer's to ship,
 * as with any bundler.
 */
export function engineNotices(engineDir: string, metafile: esbuild.Metafile, workingDir: string, carries: { sodiumAddon: boolean }): string {
  const packages = new Set([engineDir]);
  for (const input of Object.keys(metafile.inputs)) {
    // Inputs from a plugin's namespace (`latchkey-sodium:binding`) are the engine's own shims.
    if (/^[\w-]+:/.test(input)) continue;
    const dir = packageDirOf(path.resolve(workingDir, input));
    if (dir) packages.add(dir);
  }
  const notices = [...packages].map((dir) => packageNotice(dir, dir === engineDir ? 'the Latchkey runtime engine' : null, carries));
  return `Notices of the open-source software in this file besides the app itself.\n\n${notices.join('\n')}`;
}

/** The package a file installed under node_modules belongs to (`…/node_modules/@scope/name`); null for other files. */
function packageDirOf(file: string): string | null {
  const parts = file.split(path.sep);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return null;
  const length = parts[at + 1]!.startsWith('@') ? 3 : 2;
  return parts.slice(0, at + length).join(path.sep);
}

/**
 * `== name version (licence): what it is ==`, its licence file, and the notices it ships for what it
 * built in. The engine's own licence must be there (the build fails without it: its package is
 * built here); another package without a licence file is named with its licence's identifier.
 */
function packageNotice(dir: string, role: string | null, carries: { sodiumAddon: boolean }): string {
  const { name, version, license } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
  const licenseFile = fs.readdirSync(dir).find((file) => /^(licen[cs]e|copying)([.-][\w.-]+)?$/i.test(file));
  if (!licenseFile && role) throw new Error(`${name} has no LICENSE file to carry into protected builds (its build copies the project's)`);
  const text = licenseFile ? fs.readFileSync(path.join(dir, licenseFile), 'utf8').trim() : `(${name} ships no licence file; its package.json names ${license ?? 'none'})`;
  const builtIn = path.join(dir, 'dist', 'THIRD_PARTY_NOTICES');
  const parts = [`== ${name} ${version} (${license ?? 'licence not named'})${role ? `: ${role}` : ''} ==`, text];
  if (fs.existsSync(builtIn)) parts.push(`== Built into ${name} ==`, fs.readFileSync(builtIn, 'utf8').trim());
  if (name === 'sodium-native' && carries.sodiumAddon) parts.push(sodiumAddonNotices(dir));
  return `${parts.join('\n\n')}\n`;
}
