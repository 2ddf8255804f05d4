import { describe, expect, it } from 'vitest';
import { cpuFromCpuinfo, firmwareString, firstFixedDiskSerial, primaryMac } from './linux-probes.js';

const nic = (mac: string, internal = false) => [{ address: '10.0.0.2', netmask: '255.0.0.0', family: 'IPv4' as const, mac, internal, cidr: null }];

describe('Linux hardware files read as systeminformation read them', () => {
  it('cpu: brand less its manufacturer word, trademarks as symbols, no clock, family|model|stepping from the first processor', () => {
    const intel =
      'processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 158\nmodel name\t: Intel(R) Core(TM) i7-9750H CPU @ 2.60GHz\nstepping\t: 10\n\nprocessor\t: 1\nmodel name\t: other\n';
    expect(cpuFromCpuinfo(intel)).toBe('Intel|Core™ i7-9750H|6|158|10');
    const amd = 'processor\t: 0\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC Processor\nstepping\t: 1\n';
    expect(cpuFromCpuinfo(amd)).toBe('AMD|EPYC Processor|26|2|1');
    expect(cpuFromCpuinfo('processor\t: 0\n')).toBeUndefined();
  });

  it('DMI strings: firmware fillers are no value', () => {
    expect(firmwareString(' PF2ABCDE \n')).toBe('PF2ABCDE');
    expect(firmwareString('Default string')).toBeUndefined();
    expect(firmwareString('To be filled by O.E.M.')).toBeUndefined();
    expect(firmwareString(undefined)).toBeUndefined();
  });

  it('disk: the first fixed disk with a serial by device name, never a USB one', () => {
    expect(
      firstFixedDiskSerial([
        { device: '/dev/sdb', serial: 'WD-2', usb: false },
        { device: '/dev/sda', serial: 'STICK', usb: true },
        { device: '/dev/nvme0n1', serial: ' ', usb: false },
        { device: '/dev/sdc', serial: 'WD-3', usb: false },
      ]),
    ).toBe('WD-2');
    expect(firstFixedDiskSerial([])).toBeUndefined();
  });

  it('network: the lowest-named physical card; loopback, veth and hypervisor MACs are left out', () => {
    expect(
      primaryMac({
        lo: nic('00:00:00:00:00:00', true),
        wlan0: nic('3c:22:fb:12:34:57'),
        eth1: nic('3c:22:fb:12:34:56'),
        veth12ab: nic('3c:22:fb:12:34:55'),
        docker0: nic('08:00:27:00:00:01'),
      }),
    ).toBe('3c:22:fb:12:34:56');
    expect(primaryMac({ lo: nic('00:00:00:00:00:00', true) })).toBeUndefined();
  });
});
