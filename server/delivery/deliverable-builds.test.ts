import { describe, expect, it } from 'vitest';
import { newestOffer, offerPerPlatform, offersForVisitor, visitorPlatform, type DeliverableBuild, type PlatformOffer } from './deliverable-builds.js';

const build = (id: string, platform: string, completedAt: string): DeliverableBuild => ({
  id,
  platform,
  version: `v-${id}`,
  package_key: `pkg/${id}`,
  package_name: `${id}.bin`,
  protected_size_bytes: 1,
  sha256: 'x',
  completed_at: new Date(completedAt),
});

const UA = {
  windows: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  windowsArm: 'Mozilla/5.0 (Windows NT 10.0; ARM64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  mac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  linux: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  linuxArm: 'Mozilla/5.0 (X11; Linux aarch64; rv:133.0) Gecko/20100101 Firefox/133.0',
  android: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
  iphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
};

describe('offerPerPlatform', () => {
  it("gives each of the app's platforms its own newest build, whatever was uploaded last", () => {
    const win = build('win', 'win-x64', '2026-01-01');
    const linux = build('linux', 'linux-x64', '2026-02-01');
    const offers = offerPerPlatform(['win-x64', 'linux-x64'], [linux, win]);
    expect(offers.map((o) => [o.platform, o.build.id])).toEqual([
      ['win-x64', 'win'],
      ['linux-x64', 'linux'],
    ]);
  });

  it('falls back to the newest cross_platform build for a platform without one of its own, and offers nothing without either', () => {
    const older = build('cp-old', 'cross_platform', '2026-01-01');
    const newer = build('cp-new', 'cross_platform', '2026-03-01');
    const mac = build('mac', 'mac-arm64', '2026-02-01');
    expect(offerPerPlatform(['mac-arm64', 'win-x64'], [mac, older, newer]).map((o) => [o.platform, o.build.id])).toEqual([
      ['mac-arm64', 'mac'],
      ['win-x64', 'cp-new'],
    ]);
    expect(offerPerPlatform(['win-x64'], [mac])).toEqual([]);
  });

  it('names the newest offered build for the single-link fields', () => {
    const offers = offerPerPlatform(['win-x64', 'linux-x64'], [build('win', 'win-x64', '2026-01-01'), build('linux', 'linux-x64', '2026-02-01')]);
    expect(newestOffer(offers)?.build.id).toBe('linux');
    expect(newestOffer([])).toBeUndefined();
  });
});

describe('visitorPlatform', () => {
  it('reads the desktop OS, and the architecture where the browser tells it', () => {
    expect(visitorPlatform(UA.windows)).toEqual({ os: 'win', arch: 'x64' });
    expect(visitorPlatform(UA.windowsArm)).toEqual({ os: 'win', arch: 'arm64' });
    expect(visitorPlatform(UA.linux)).toEqual({ os: 'linux', arch: 'x64' });
    expect(visitorPlatform(UA.linuxArm)).toEqual({ os: 'linux', arch: 'arm64' });
    // Safari and Chrome on Apple silicon still say "Intel": a Mac's architecture is not read.
    expect(visitorPlatform(UA.mac)).toEqual({ os: 'mac', arch: undefined });
  });

  it('tells no desktop platform for phones, an empty header or anything unknown', () => {
    for (const ua of [UA.android, UA.iphone, undefined, '', 'curl/8.5.0']) expect(visitorPlatform(ua)).toBeUndefined();
  });
});

/** What a delivery surface lists: the platform and the build's own platform. */
const choices = (offers: PlatformOffer[]) => offers.map((o) => ({ platform: o.platform, build_platform: o.build.platform, build_id: o.build.id }));

describe('offersForVisitor', () => {
  const all = choices(
    offerPerPlatform(
      ['linux-x64', 'win-x64', 'win-arm64', 'mac-x64', 'mac-arm64'],
      [
        build('linux', 'linux-x64', '2026-05-01'),
        build('win', 'win-x64', '2026-01-01'),
        build('winarm', 'win-arm64', '2026-01-02'),
        build('macx', 'mac-x64', '2026-01-03'),
        build('macarm', 'mac-arm64', '2026-01-04'),
      ],
    ),
  );
  const mine = (offers: typeof all, ua: string | undefined) => offersForVisitor(offers, ua).mine?.platform;

  it("puts the visitor's own OS and architecture first and keeps the rest in the app's order", () => {
    const { mine: first, others } = offersForVisitor(all, UA.windows);
    expect(first?.platform).toBe('win-x64');
    expect(others.map((o) => o.platform)).toEqual(['linux-x64', 'win-arm64', 'mac-x64', 'mac-arm64']);
    expect(mine(all, UA.windowsArm)).toBe('win-arm64');
    expect(mine(all, UA.linux)).toBe('linux-x64');
    expect(mine(all, UA.mac)).toBe('mac-arm64');
  });

  it("takes the visitor's OS on the other architecture when theirs is not shipped", () => {
    const winOnly = all.filter((o) => o.platform === 'win-x64' || o.platform === 'linux-x64');
    expect(mine(winOnly, UA.windowsArm)).toBe('win-x64');
    const macIntel = all.filter((o) => o.platform === 'mac-x64');
    expect(mine(macIntel, UA.mac)).toBe('mac-x64');
  });

  it('falls back to a cross_platform build for an OS the app has no build of, and picks nothing of another OS', () => {
    const cp = build('cp', 'cross_platform', '2026-01-01');
    const offers = choices(offerPerPlatform(['win-x64', 'linux-x64'], [build('win', 'win-x64', '2026-01-01'), cp]));
    expect(offersForVisitor(offers, UA.linux).mine?.build_id).toBe('cp');
    // An app that ships no Linux build still has a build for every OS to offer a Linux visitor.
    const everyOs = choices(offerPerPlatform(['win-x64', 'mac-arm64'], [build('win', 'win-x64', '2026-01-01'), cp]));
    expect(offersForVisitor(everyOs, UA.linux).mine?.platform).toBe('mac-arm64');
    const windowsOnly = choices(offerPerPlatform(['win-x64'], [build('win', 'win-x64', '2026-01-01')]));
    expect(offersForVisitor(windowsOnly, UA.mac).mine).toBeUndefined();
    expect(offersForVisitor(windowsOnly, UA.android)).toEqual({ mine: undefined, others: windowsOnly });
  });
});
