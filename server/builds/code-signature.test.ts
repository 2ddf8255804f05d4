import { describe, expect, it } from 'vitest';
import { fatMachOFile, machOFile, peFile } from '../../test/support/executables.js';
import { carriesCodeSignature, machOCodeSignature, peProgramDigest, readPeLayout, type ReadAt } from './code-signature.js';

const reader =
  (bytes: Buffer): ReadAt =>
  async (offset, length) =>
    bytes.subarray(offset, offset + length);
const signedPe = (bytes: Buffer) => carriesCodeSignature('pe', reader(bytes), bytes.length);
const signedMachO = (bytes: Buffer) => carriesCodeSignature('mach_o', reader(bytes), bytes.length);

describe('PE: an Authenticode certificate table', () => {
  it('is found in a signed PE32+ and PE32, and not in an unsigned one', async () => {
    for (const pe32 of [false, true]) {
      expect(await signedPe(peFile({ pe32, signature: 'pkcs7' })), `pe32 ${pe32}`).toBe(true);
      expect(await signedPe(peFile({ pe32 })), `pe32 ${pe32}`).toBe(false);
    }
  });

  it('is not trusted when the directory points past the end of the file or at something that is not a WIN_CERTIFICATE', async () => {
    const truncated = peFile({ signature: 'pkcs7 signed data' });
    expect(await signedPe(truncated.subarray(0, truncated.length - 4))).toBe(false);
    const wrongType = peFile({ signature: 'pkcs7' });
    const table = (await readPeLayout(reader(wrongType)))!.certificates!;
    wrongType.writeUInt16LE(0x0001, table.offset + 6); // WIN_CERT_TYPE_X509, not Authenticode
    expect(await signedPe(wrongType)).toBe(false);
  });

  it('is not looked for in what is not a PE', async () => {
    for (const bytes of [Buffer.from('MZ but nothing more'), Buffer.from('signed text, not a program'), machOFile({ signed: true }), Buffer.alloc(0)]) {
      expect(await readPeLayout(reader(bytes))).toBeNull();
      expect(await signedPe(bytes)).toBe(false);
    }
  });

  it('leaves the program digest as it was: a package and its signed copy are the same program, another program is not', async () => {
    const digest = (bytes: Buffer) => peProgramDigest(reader(bytes), bytes.length);
    const unsigned = await digest(peFile({ program: 'the protected app' }));
    expect(unsigned).toMatch(/^[0-9a-f]{64}$/);
    expect(await digest(peFile({ program: 'the protected app', signature: 'first certificate' }))).toBe(unsigned);
    expect(await digest(peFile({ program: 'the protected app', signature: 'a renewed certificate, longer' }))).toBe(unsigned);
    expect(await digest(peFile({ program: 'the protected app, changed', signature: 'first certificate' }))).not.toBe(unsigned);
    expect(await digest(Buffer.from('not a PE'))).toBeNull();
  });
});

describe('Mach-O: an LC_CODE_SIGNATURE load command', () => {
  it('is found in a signed thin Mach-O of either size and byte order, and not in an unsigned one', async () => {
    for (const bits of [32, 64] as const) {
      for (const bigEndian of [false, true]) {
        const shape = `${bits}-bit ${bigEndian ? 'big' : 'little'}-endian`;
        expect(await signedMachO(machOFile({ signed: true, bits, bigEndian })), shape).toBe(true);
        expect(await signedMachO(machOFile({ signed: false, bits, bigEndian })), shape).toBe(false);
      }
    }
  });

  it('must be in every slice of a fat (universal) file', async () => {
    const signed = machOFile({ signed: true });
    const unsigned = machOFile({ signed: false });
    expect(await signedMachO(fatMachOFile([signed, machOFile({ signed: true, bits: 32 })]))).toBe(true);
    expect(await signedMachO(fatMachOFile([signed, unsigned]))).toBe(false);
    expect(await signedMachO(fatMachOFile([unsigned]))).toBe(false);
  });

  it('is not looked for in what is not a Mach-O, a Java class (0xcafebabe too) included', async () => {
    const javaClass = Buffer.from([0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x41, 0, 0, 0, 0]);
    for (const bytes of [javaClass, peFile({ signature: 'pkcs7' }), Buffer.from('#!/bin/sh\n'), Buffer.alloc(0)]) {
      expect(await machOCodeSignature(reader(bytes))).toBeNull();
      expect(await signedMachO(bytes)).toBe(false);
    }
  });
});
