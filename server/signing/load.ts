import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, type Config } from '../config.js';
import { generateSigningKey, Keyring, parseSigningKeys, signingKeyToPem } from './keyring.js';

/** Where embedded mode keeps its signing keys; to rotate, put a new PEM block first in the file. */
export const SIGNING_KEYS_FILE = 'signing-keys.pem';

/** The configured signing keys, or in embedded mode a key generated once into the data directory. */
export function loadKeyring(config: Config): Keyring {
  if (config.signingKeys) return new Keyring(config.signingKeys);
  if (config.databaseUrl) {
    throw new ConfigError('LATCHKEY_SIGNING_KEYS is required when DATABASE_URL is set (Ed25519 PKCS#8 keys, base64 DER or PEM)');
  }
  const file = path.join(config.dataDir, SIGNING_KEYS_FILE);
  if (!fs.existsSync(file)) fs.writeFileSync(file, signingKeyToPem(generateSigningKey()), { mode: 0o600, flag: 'wx' });
  try {
    return new Keyring(parseSigningKeys(fs.readFileSync(file, 'utf8')));
  } catch (err) {
    throw new ConfigError(`${file}: not Ed25519 PKCS#8 PEM keys (${(err as Error).message})`);
  }
}
