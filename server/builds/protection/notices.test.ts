import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADDON_SOURCES } from './notices.js';

describe("the notices of what sodium-native's prebuilt addon has compiled in", () => {
  it('are pinned to the sources the installed sodium-native builds its addon from', () => {
    const sodium = path.dirname(createRequire(import.meta.url).resolve('sodium-native/package.json'));
    const fetched = [...fs.readFileSync(path.join(sodium, 'CMakeLists.txt'), 'utf8').matchAll(/fetch_package\("github:([^"]+)"/g)].map((m) => m[1]);
    // An upgrade of sodium-native that changes these fails here: the pinned notices (notices.ts) must follow it.
    expect(fetched.sort()).toEqual(Object.values(ADDON_SOURCES).sort());
  });
});
