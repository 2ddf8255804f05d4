import { describe, expect, it } from 'vitest';
import { machineIdFromIoreg, machineIdFromRegQuery } from './machine-id.js';

describe('machine id parsing', () => {
  it('reads IOPlatformUUID from ioreg, lower case', () => {
    const out =
      '+-o J316sAP  <class IOPlatformExpertDevice>\n    {\n      "IOPlatformSerialNumber" = "C02XX"\n      "IOPlatformUUID" = "8A1B2C3D-0000-4E5F-9A8B-112233445566"\n      "model" = <"MacBookPro18,1">\n';
    expect(machineIdFromIoreg(out)).toBe('8a1b2c3d-0000-4e5f-9a8b-112233445566');
  });

  it('reads MachineGuid from REG QUERY, without the line breaks Windows adds', () => {
    const out = '\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\r\n    MachineGuid    REG_SZ    1C2D3E4F-AAAA-BBBB-CCCC-DDDDEEEEFFFF\r\n\r\n';
    expect(machineIdFromRegQuery(out)).toBe('1c2d3e4f-aaaa-bbbb-cccc-ddddeeeeffff');
  });

  it('is unknown when the command failed or printed something else', () => {
    expect(machineIdFromIoreg(undefined)).toBeUndefined();
    expect(machineIdFromIoreg('no such key')).toBeUndefined();
    expect(machineIdFromRegQuery('ERROR: The system was unable to find the specified registry key or value.')).toBeUndefined();
  });
});
