/**
 * docs/contract.md Versioning 3 for a protected Windows build: its signed package must be the
 * protected single executable it was given, signed; the build stays READY and as protected as it
 * says. (The Windows runtime is downloaded once per machine, as in platforms.test.ts.)
 */
import fs from 'node:fs';
import { beforeAll, expect, it } from 'vitest';
import { expectError } from '../support/assertions.js';
import { peFile, withAuthenticode } from '../support/executables.js';
import { downloadPackage, protectionWorld, settled, upload, uploadBuild } from './support.js';

const world = await protectionWorld('signed-protected', { platforms: ['win-x64'] });
const { o } = world;
let build: Record<string, any>;
let executable: Buffer;

beforeAll(async () => {
  const uploaded = await uploadBuild(o, { data: "console.log('Notes Pro');\n", name: 'main.mjs' }, { platform: 'win-x64', version: '3.0.0' });
  build = await settled(o, uploaded.id);
  expect(build, build.failure_reason).toMatchObject({ status: 'READY', package_format: 'single_executable', protection_level: 'encrypted' });
  executable = fs.readFileSync(await downloadPackage(o, build as { id: string; package_name: string }, world.work));
}, 600_000);

const replace = (data: Buffer) =>
  upload(o, {
    method: 'PUT',
    path: `/v1/apps/${o.app.id}/builds/${build.id}/signed-package`,
    file: { data: new Uint8Array(data), name: build.package_name },
    fileField: 'package',
  });

it('[Versioning 3] a protected build takes only its own executable, signed, and stays READY and as protected as it says', async () => {
  // Another signed program, and the build's own executable changed by a byte: not this build's package.
  expectError(await replace(peFile({ signature: 'pkcs7' })), 422, 'PACKAGE_REJECTED');
  const tampered = Buffer.from(executable);
  tampered[tampered.length >> 1]! ^= 0xff;
  expectError(await replace(withAuthenticode(tampered, 'pkcs7')), 422, 'PACKAGE_REJECTED');
  // Its own, unsigned (Node's runtime signature, if any, was kept by injection): refused as before.
  expect((await replace(executable)).status).toBe(422);

  const signed = withAuthenticode(executable, 'the developer certificate');
  const res = await replace(signed);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body).toMatchObject({
    status: 'READY',
    protection_level: 'encrypted',
    package_format: 'single_executable',
    engine_version: build.engine_version,
    protected_size_bytes: signed.length,
  });
  // Signed again with a renewed certificate: still the same program.
  expect((await replace(withAuthenticode(signed, 'a renewed certificate'))).status).toBe(200);
}, 120_000);
