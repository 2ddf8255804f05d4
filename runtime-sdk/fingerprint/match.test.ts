import { describe, expect, it } from 'vitest';
import type { ComponentHashes } from './components.js';
import { deviceMatches } from './match.js';

const h = (c: string) => c.repeat(64);
const recorded: ComponentHashes = { 'os.machine_id': h('a'), 'system.uuid': h('b'), 'board.serial': h('c'), 'disk.serial': h('d'), cpu: h('e') };

describe('component-tolerant device matching (machine id plus any two by default)', () => {
  it.each([
    { name: 'every component the same', presented: recorded, matches: true },
    { name: 'a new disk', presented: { ...recorded, 'disk.serial': h('9') }, matches: true },
    { name: 'new disk and new board: machine id plus uuid and cpu', presented: { ...recorded, 'disk.serial': h('9'), 'board.serial': h('8') }, matches: true },
    { name: 'only one other component left the same', presented: { ...recorded, 'disk.serial': h('9'), 'board.serial': h('8'), cpu: h('7') }, matches: false },
    { name: 'another machine id', presented: { ...recorded, 'os.machine_id': h('0') }, matches: false },
    { name: 'no machine id', presented: { 'system.uuid': h('b'), 'board.serial': h('c'), 'disk.serial': h('d') }, matches: false },
    { name: 'components missing from the reading do not count', presented: { 'os.machine_id': h('a'), cpu: h('e') }, matches: false },
  ])('$name -> $matches', ({ presented, matches }) => {
    expect(deviceMatches(recorded, presented)).toBe(matches);
  });

  it('a device with fewer components on record must keep all but one: a VM keeps its seat when its MAC changes', () => {
    const vm: ComponentHashes = { 'os.machine_id': h('a'), cpu: h('e'), 'net.primary_mac': h('f') };
    expect(deviceMatches(vm, { ...vm, 'net.primary_mac': h('1') })).toBe(true);
    expect(deviceMatches(vm, { ...vm, 'net.primary_mac': h('1'), cpu: h('2') })).toBe(false);
  });

  it('the number of other components is configurable', () => {
    const presented = { ...recorded, 'disk.serial': h('9') };
    expect(deviceMatches(recorded, presented, { others: 3 })).toBe(true);
    expect(deviceMatches(recorded, { ...presented, cpu: h('7') }, { others: 3 })).toBe(false);
    expect(deviceMatches(recorded, { 'os.machine_id': h('a') }, { others: 0 })).toBe(true);
  });
});
