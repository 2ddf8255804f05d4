import fs from 'node:fs';
import path from 'node:path';

/**
 * What sodium-native's prebuilt addon (sodium-native.node, which an executable carries) has
 * compiled in besides sodium-native's own code, whose notices its npm package does not ship. The
 * sources are those its CMakeLists.txt names, `fetch_package("github:…")` and
 * `resolve_node_module(…)` (headers), each pinned here with its notice as published at that
 * source. A sodium-native that names other sources fails the build (addonSourcesOf), so an upgrade
 * cannot ship stale notices: they are brought up to date here.
 */

/** libsodium's LICENSE at its pinned commit, without its comment frame. */
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

/** The NOTICE Holepunch's Apache-2.0 packages (libjstl, bare-compat-napi) carry, for its year. */
const holepunchNotice = (year: number) => `Copyright ${year} Holepunch Inc

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.`;

/** By source as CMakeLists.txt names it: the name, licence and notice of what it compiles in. */
const PINNED: Record<string, { name: string; license: string; text: string }> = {
  'github:jedisct1/libsodium#e18eee6': { name: 'libsodium', license: 'ISC', text: LIBSODIUM_LICENSE },
  // Apache-2.0: their NOTICE here; the licence's text is the engine's, which the notices give first.
  'github:holepunchto/libjstl#098664c': { name: 'libjstl', license: 'Apache-2.0', text: holepunchNotice(2025) },
  'bare-compat-napi': { name: 'bare-compat-napi (its headers)', license: 'Apache-2.0', text: holepunchNotice(2023) },
};

/** The pinned sources, sorted: what addonSourcesOf must answer for the notices to be current. */
export const PINNED_ADDON_SOURCES = Object.keys(PINNED).sort();

/** The sources sodium-native's CMakeLists.txt compiles into its addon, sorted. */
export function addonSourcesOf(sodiumDir: string): string[] {
  const cmake = fs.readFileSync(path.join(sodiumDir, 'CMakeLists.txt'), 'utf8');
  const named = [...cmake.matchAll(/fetch_package\("(github:[^"]+)"/g), ...cmake.matchAll(/resolve_node_module\(([\w@/.-]+)/g)];
  return named.map((match) => match[1]!).sort();
}

/**
 * The notices of what the addon of the sodium-native in `sodiumDir` has compiled in, with its
 * pbkdf2 extension's (BSD-2-Clause), read from the extension's source in the package.
 */
export function sodiumAddonNotices(sodiumDir: string): string {
  const sources = addonSourcesOf(sodiumDir);
  if (sources.join('\n') !== PINNED_ADDON_SOURCES.join('\n')) {
    throw new Error(
      `sodium-native's addon is built from ${sources.join(', ')}, but the notices protected builds carry are pinned for ${PINNED_ADDON_SOURCES.join(', ')} (server/builds/protection/addon-notices.ts)`,
    );
  }
  const pbkdf2 = /^\/\*-?\n([\s\S]*?)\*\//.exec(fs.readFileSync(path.join(sodiumDir, 'extensions', 'pbkdf2', 'pbkdf2.c'), 'utf8'))?.[1];
  if (!pbkdf2) throw new Error("sodium-native's extensions/pbkdf2/pbkdf2.c does not start with its licence notice");
  return [
    ...Object.entries(PINNED).flatMap(([source, { name, license, text }]) => [
      `== ${name} (${license}), ${source}: compiled into sodium-native's addon (sodium-native.node) ==`,
      text,
    ]),
    "== sodium-native's pbkdf2 extension (BSD-2-Clause): compiled into the same addon ==",
    pbkdf2.replace(/^ \* ?/gm, '').trim(),
  ].join('\n\n');
}
