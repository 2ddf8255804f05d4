import { describe, expect, it } from 'vitest';
import { readComponents, type Components, type Probe } from './components.js';

describe('reading the components: probes in parallel, each within the deadline', () => {
  it('runs the probes together: one that needs another to have started still answers', async () => {
    let startOther!: () => void;
    const otherStarted = new Promise<void>((resolve) => (startOther = resolve));
    const waitsForOther: Probe = async () => {
      await otherStarted;
      return { cpu: 'amd|epyc|26|2|1' };
    };
    const other: Probe = async () => {
      startOther();
      return { 'os.machine_id': 'a1b2' };
    };
    // One after the other, the first would wait for the second until its deadline and be left out.
    expect(await readComponents([waitsForOther, other], 5_000)).toEqual({ components: { cpu: 'amd|epyc|26|2|1', 'os.machine_id': 'a1b2' }, complete: true });
  });

  it('leaves out a probe that never answers, once the deadline passes, and keeps what the others read', async () => {
    const neverAnswers: Probe = () => new Promise<Components>(() => {});
    const failing: Probe = () => Promise.reject(new Error('no access'));
    const reading = await readComponents([neverAnswers, async () => ({ 'os.machine_id': 'a1b2', cpu: 'x' }), failing], 50);
    expect(reading).toEqual({ components: { 'os.machine_id': 'a1b2', cpu: 'x' }, complete: false });
  });
});
