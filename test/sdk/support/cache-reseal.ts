/**
 * What any process of the same user can do with the SDK's own code: open an installation's cache
 * with the keys the SDK derives, change what it holds and seal it again. The attack the grace
 * anchoring must withstand.
 */
import fs from 'node:fs';
import { deriveCacheKey } from '../../../runtime-sdk/token-store/cache-keys.js';
import { openBody, readEnvelope, sealEnvelope } from '../../../runtime-sdk/token-store/cache-file.js';
import { maskedMemory } from '../../../runtime-sdk/token-store/secret-memory.js';

export async function resealCache(
  file: string,
  key: { fingerprintHash: string; salt: string; appId: string },
  edit: (payload: Record<string, unknown>) => Record<string, unknown>,
): Promise<void> {
  const read = await readEnvelope(file);
  if (read.kind !== 'present') throw new Error(`no cache to reseal: ${read.kind}`);
  // Bound to the installation (no OS store here): its id is in the envelope for anyone who reads the file.
  const binding = read.envelope.binding;
  if (binding?.kind === 'os-store') throw new Error('this helper re-seals caches bound to the installation only');
  const cacheKey = maskedMemory.store(deriveCacheKey(key.fingerprintHash, key.salt, key.appId, binding && Buffer.from(binding.id, 'base64')));
  const aad = `latchkey-license-cache/v1/${key.appId}`;
  const opened = openBody(read.envelope, cacheKey, aad);
  if (opened.kind !== 'opened') throw new Error(`the cache did not open: ${opened.kind}`);
  const payload = edit(JSON.parse(opened.plaintext.toString('utf8')) as Record<string, unknown>);
  const text = sealEnvelope({ components: read.envelope.components, binding, body: Buffer.from(JSON.stringify(payload)), cacheKey, aad });
  // The memo stays as it was: the warm start opens the re-sealed body with the remembered fingerprint.
  fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(text), ...(read.envelope.memo ? { memo: read.envelope.memo } : {}) }));
}
