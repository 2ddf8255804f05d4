import { describe, expect, it } from 'vitest';
import { buildSuitsDevice, operatingSystemOf, pushDecision, type PushCandidate } from './eligibility.js';

describe('operatingSystemOf', () => {
  it('reads the operating system of each platform label, and none of cross_platform or an unknown label', () => {
    expect(['win-x64', 'win-arm64', 'linux-x64', 'linux-arm64', 'mac-x64', 'mac-arm64'].map(operatingSystemOf)).toEqual(['win', 'win', 'linux', 'linux', 'mac', 'mac']);
    expect(operatingSystemOf('cross_platform')).toBeNull();
    expect(operatingSystemOf('amiga-m68k')).toBeNull();
  });
});

describe('buildSuitsDevice', () => {
  it('matches on operating system only, not architecture', () => {
    expect(buildSuitsDevice('win-x64', 'win-arm64')).toBe(true);
    expect(buildSuitsDevice('mac-arm64', 'mac-x64')).toBe(true);
    expect(buildSuitsDevice('linux-x64', 'linux-x64')).toBe(true);
    expect(buildSuitsDevice('win-x64', 'linux-x64')).toBe(false);
    expect(buildSuitsDevice('mac-arm64', 'win-arm64')).toBe(false);
  });

  it('offers a build for no single operating system to every device, an unknown device only that', () => {
    expect(buildSuitsDevice('cross_platform', 'win-arm64')).toBe(true);
    expect(buildSuitsDevice('cross_platform', null)).toBe(true);
    expect(buildSuitsDevice('linux-x64', null)).toBe(false);
  });
});

describe('pushDecision', () => {
  const base: PushCandidate = {
    targetBuildId: 'bld_new',
    targetPlatform: 'win-x64',
    devicePlatform: 'win-arm64',
    engineVersion: '1.0.0.0.0.178',
    runningBuildId: 'bld_old',
    adoption: null,
  };

  it('offers the target to a device of its operating system on a capable engine', () => {
    expect(pushDecision(base)).toBe('offer');
    expect(pushDecision({ ...base, adoption: 'failed' })).toBe('offer');
  });

  it('withholds it from another operating system, an engine too old or unknown, and a device that skipped or installed it', () => {
    expect(pushDecision({ ...base, devicePlatform: 'mac-arm64' })).toBe('withheld');
    expect(pushDecision({ ...base, engineVersion: '1.0.0.0.0.177' })).toBe('withheld');
    expect(pushDecision({ ...base, engineVersion: null })).toBe('withheld');
    expect(pushDecision({ ...base, adoption: 'skipped' })).toBe('withheld');
    expect(pushDecision({ ...base, adoption: 'installed' })).toBe('withheld');
  });

  it('tells a device running the target apart', () => {
    expect(pushDecision({ ...base, runningBuildId: 'bld_new' })).toBe('running');
    expect(pushDecision({ ...base, runningBuildId: 'bld_new', adoption: 'skipped' })).toBe('running');
  });
});
