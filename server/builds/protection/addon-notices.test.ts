import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonSourcesOf, PINNED_ADDON_SOURCES, sodiumAddonNotices } from './addon-notices.js';

const installed = path.dirname(createRequire(import.meta.url).resolve('sodium-native/package.json'));

describe("the notices of what sodium-native's prebuilt addon has compiled in", () => {
  it('are pinned for every source the installed sodium-native compiles into its addon', () => {
    // An upgrade of sodium-native that changes them fails here, and fails every executable's build.
    expect(addonSourcesOf(installed)).toEqual(PINNED_ADDON_SOURCES);
    const notices = sodiumAddonNotices(installed);
    for (const source of PINNED_ADDON_SOURCES) expect(notices).toContain(`, ${source}: compiled into sodium-native's addon`);
    expect(notices).toContain('Copyright 2005,2007,2009 Colin Percival');
  });
});
