/**
 * The integrity check of a `hardened` build: protection hashes the protected code (everything
 * between two markers in the bundle, wherever the file puts it: a .mjs file, or the script inside a
 * single executable, which signing tools leave untouched) and bakes in a document the authority
 * signed over that SHA-256 (protocol.ts, `latchkey-build-integrity+jwt`); at start the engine
 * verifies the signature with its pinned keys, hashes the same bytes of its own file, and refuses to
 * run when they differ. The document sits inside the hashed bytes, in a fixed-size slot: it is
 * swapped for the placeholder on both sides.
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { verifyBuildIntegrity, type Ed25519PublicJwk, type JwkSet } from '../protocol.js';

// Joined at run time: the markers must occur in the file only where protection put them.
export const REGION_BEGIN = ['/*LATCHKEY', 'PROTECTED', 'BEGIN*/'].join('-');
export const REGION_END = ['/*LATCHKEY', 'PROTECTED', 'END*/'].join('-');
/** The slot protection fills with the signed document, padded with spaces (a compact EdDSA JWS of these claims is about 420 characters). */
export const DIGEST_PLACEHOLDER = '#'.repeat(640);

const CHUNK = 4 * 1024 * 1024;

/** The bytes between the markers, read in chunks (a single executable is about 100 MB); null without them. */
export async function protectedRegion(file: string): Promise<Buffer | null> {
  const handle = await open(file, 'r');
  try {
    const begin = Buffer.from(REGION_BEGIN);
    const end = Buffer.from(REGION_END);
    const collected: Buffer[] = [];
    let carry = Buffer.alloc(0);
    let inside = false;
    for (let position = 0; ;) {
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(CHUNK), 0, CHUNK, position);
      if (bytesRead === 0) return null;
      position += bytesRead;
      const window = Buffer.concat([carry, buffer.subarray(0, bytesRead)]);
      if (!inside) {
        const at = window.indexOf(begin);
        if (at < 0) {
          carry = window.subarray(Math.max(0, window.length - begin.length + 1));
          continue;
        }
        inside = true;
        carry = window.subarray(at + begin.length);
      } else {
        carry = window;
      }
      const stop = carry.indexOf(end);
      if (stop >= 0) return Buffer.concat([...collected, carry.subarray(0, stop)]);
      // Keep a tail that may hold the start of the end marker; the rest is region for sure.
      const keep = Math.min(carry.length, end.length - 1);
      collected.push(carry.subarray(0, carry.length - keep));
      carry = carry.subarray(carry.length - keep);
    }
  } finally {
    await handle.close();
  }
}

/** SHA-256 of the region with the baked-in document (when there is one) put back to the placeholder. */
export function regionDigest(region: Buffer, baked: string | null): string {
  let bytes = region;
  if (baked) {
    const at = region.indexOf(baked);
    if (at >= 0) bytes = Buffer.concat([region.subarray(0, at), Buffer.from(DIGEST_PLACEHOLDER), region.subarray(at + baked.length)]);
  }
  return createHash('sha256').update(bytes).digest('hex');
}

/** Fits a signed document into the slot: padded with spaces to the placeholder's length. */
export function fillSlot(document: string): string {
  if (document.length > DIGEST_PLACEHOLDER.length) throw new Error(`integrity document of ${document.length} characters does not fit its slot`);
  return document.padEnd(DIGEST_PLACEHOLDER.length, ' ');
}

/**
 * Whether the protected code in `file` is what the authority signed for this build: `slot` is the
 * baked-in value as the engine's config carries it.
 */
export async function isIntact(file: string, slot: string, keys: JwkSet | Ed25519PublicJwk[], expect: { appId: string; buildId: string }): Promise<boolean> {
  let signed: string;
  try {
    signed = verifyBuildIntegrity(slot.trimEnd(), keys, expect).sha256;
  } catch {
    return false;
  }
  const region = await protectedRegion(file).catch(() => null);
  return region !== null && regionDigest(region, slot) === signed;
}
