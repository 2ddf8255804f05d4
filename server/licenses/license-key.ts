import { z } from 'zod';
import { randomHumanCode } from '../crypto/secrets.js';

/** `XXXX-XXXX-XXXX-XXXX`: what docs/contract.md fixes for every license key, whichever channel minted it. */
export const LICENSE_KEY_PATTERN = /^[A-Z0-9]{4}(?:-[A-Z0-9]{4}){3}$/;

/** 16 CSPRNG characters from an alphabet without look-alikes (about 79 bits), in 4 groups of 4. */
export function newLicenseKey(): string {
  return randomHumanCode(16).match(/.{4}/g)!.join('-');
}

/** A key as people type it: surrounding spaces and lower case are forgiven, anything else is refused. */
export const LicenseKeyInput = z.string().trim().toUpperCase().regex(LICENSE_KEY_PATTERN, 'must be a license key of the form XXXX-XXXX-XXXX-XXXX');
