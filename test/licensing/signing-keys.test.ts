import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';
import { SIGNING_KEYS_FILE, loadKeyring } from '../../server/signing/load.js';

const run = promisify(execFile);
const der = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-keys-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('LATCHKEY_SIGNING_KEYS', () => {
  it('takes comma-separated base64 PKCS#8 DER or PEM blocks, the first being the signer', () => {
    const [a, b] = [der(), der()];
    const fromDer = loadKeyring(loadConfig({ LATCHKEY_SIGNING_KEYS: ` ${a} , ${b} ` }));
    expect(fromDer.jwks.keys).toHaveLength(2);
    const fromPem = loadKeyring(loadConfig({ LATCHKEY_SIGNING_KEYS: `${pem()}\n${pem()}` }));
    expect(fromPem.jwks.keys).toHaveLength(2);
    const single = loadKeyring(loadConfig({ LATCHKEY_SIGNING_KEYS: a }));
    expect(single.jwks.keys[0]!.kid).toBe(fromDer.jwks.keys[0]!.kid);
  });

  it.each([
    ['garbage', 'not a key'],
    ['an empty list', ' , '],
    ['a key of another type', generateKeyPairSync('x25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')],
    ['a public key', generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).toString('base64')],
  ])('refuses %s, naming the variable', (_name, value) => {
    expect(() => loadConfig({ LATCHKEY_SIGNING_KEYS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ LATCHKEY_SIGNING_KEYS: value })).toThrow(/LATCHKEY_SIGNING_KEYS: must be Ed25519 PKCS#8 keys/);
  });

  it('stops the server at start with a message naming the variable, without echoing the value', async () => {
    const secretLooking = 'c2VjcmV0LXZhbHVlLXRoYXQtaXMtbm90LWEta2V5';
    const result = await run(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
      env: { PATH: process.env.PATH, LATCHKEY_DATA_DIR: tempDir(), LATCHKEY_SIGNING_KEYS: secretLooking },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('LATCHKEY_SIGNING_KEYS');
    expect(result.stderr).not.toContain(secretLooking);
  });

  it('is required with DATABASE_URL', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db.example/latchkey', LATCHKEY_DATA_DIR: tempDir() });
    expect(() => loadKeyring(config)).toThrow(/LATCHKEY_SIGNING_KEYS is required when DATABASE_URL is set/);
  });
});

describe('embedded mode signing keys', () => {
  it('are generated once into the data directory, readable by the owner only, and reused', () => {
    const dir = tempDir();
    const first = loadKeyring(loadConfig({ LATCHKEY_DATA_DIR: dir }));
    const file = path.join(dir, SIGNING_KEYS_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const again = loadKeyring(loadConfig({ LATCHKEY_DATA_DIR: dir }));
    expect(again.jwks).toEqual(first.jwks);
  });

  it('rotate by putting a new key first in the file', () => {
    const dir = tempDir();
    const old = loadKeyring(loadConfig({ LATCHKEY_DATA_DIR: dir }));
    const file = path.join(dir, SIGNING_KEYS_FILE);
    fs.writeFileSync(file, `${pem()}${fs.readFileSync(file, 'utf8')}`);
    const rotated = loadKeyring(loadConfig({ LATCHKEY_DATA_DIR: dir }));
    expect(rotated.jwks.keys).toHaveLength(2);
    expect(rotated.jwks.keys[1]).toEqual(old.jwks.keys[0]);
  });

  it('refuse a damaged key file, naming it', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, SIGNING_KEYS_FILE), randomBytes(64).toString('hex'), { mode: 0o600 });
    expect(() => loadKeyring(loadConfig({ LATCHKEY_DATA_DIR: dir }))).toThrow(new RegExp(`${SIGNING_KEYS_FILE}: not Ed25519 PKCS#8 PEM keys`));
  });

  it('are not used when LATCHKEY_SIGNING_KEYS is given', () => {
    const dir = tempDir();
    const configured = loadKeyring(loadConfig({ LATCHKEY_DATA_DIR: dir, LATCHKEY_SIGNING_KEYS: der() }));
    expect(configured.jwks.keys).toHaveLength(1);
    expect(fs.existsSync(path.join(dir, SIGNING_KEYS_FILE))).toBe(false);
  });
});
