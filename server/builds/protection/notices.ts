import fs from 'node:fs';
import path from 'node:path';
import type * as esbuild from 'esbuild';

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

/**
 * The commits of libsodium and libjstl sodium-native's prebuilt addons are compiled from (its
 * CMakeLists.txt's `fetch_package("github:…#…")`); notices.test.ts checks that the installed
 * sodium-native still names them, so an upgrade brings these notices up to date.
 */
export const ADDON_SOURCES = { libsodium: 'jedisct1/libsodium#e18eee6', libjstl: 'holepunchto/libjstl#098664c' } as const;
/** libsodium's LICENSE at its commit, without its comment frame. */
const LIBSODIUM_LICENSE = `ISC License

Copyright (c) 2013-2026
Frank Denis <j at pureftpd dot org>

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.`;
/** libjstl's NOTICE at its commit (its LICENSE is the Apache License 2.0, the engine's own, given first in the notices). */
const LIBJSTL_NOTICE = `Copyright 2025 Holepunch Inc

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.`;

/**
 * What sodium-native's prebuilt addon, carried by an executable, has compiled in besides its own
 * code, whose notices its package does not ship: libsodium (ISC), libjstl (Apache-2.0, its NOTICE),
 * and its pbkdf2 extension (BSD-2-Clause), whose notice heads the extension's source in the package.
 */
function sodiumAddonNotices(dir: string): string {
  const pbkdf2 = /^\/\*-?\n([\s\S]*?)\*\//.exec(fs.readFileSync(path.join(dir, 'extensions', 'pbkdf2', 'pbkdf2.c'), 'utf8'))?.[1];
  if (!pbkdf2) throw new Error("sodium-native's extensions/pbkdf2/pbkdf2.c does not start with its licence notice");
  const unframed = pbkdf2.replace(/^ \* ?/gm, '').trim();
  return [
    `== libsodium (ISC), ${ADDON_SOURCES.libsodium}: compiled into sodium-native's addon (sodium-native.node) ==`,
    LIBSODIUM_LICENSE,
    `== libjstl (Apache-2.0), ${ADDON_SOURCES.libjstl}: compiled into the same addon; the licence's text is the engine's, above ==`,
    LIBJSTL_NOTICE,
    "== sodium-native's pbkdf2 extension (BSD-2-Clause): compiled into the same addon ==",
    unframed,
  ].join('\n\n');
}
