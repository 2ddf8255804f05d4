import { HUMAN_ALPHABET, randomHumanCode, sha256Hex } from '../crypto/secrets.js';

/**
 * docs/contract.md's `<CODE_PREFIX>`: one prefix for the whole service, `LK`, so a code's shape never
 * depends on its seller and a customer who drops or mistypes the prefix is still understood.
 */
export const REDEMPTION_CODE_PREFIX = 'LK';

/** The random part: 12 CSPRNG characters from an alphabet without look-alikes (0 O 1 I L), about 59 bits. */
const RANDOM_LENGTH = 12;
const RANDOM_PART = new RegExp(`^[${HUMAN_ALPHABET}]{${RANDOM_LENGTH}}$`);

/** What a code looks like, for messages: `LK-XXXXXXXX-XXXX`. */
export const REDEMPTION_CODE_SHAPE = `${REDEMPTION_CODE_PREFIX}-XXXXXXXX-XXXX`;

const canonical = (random: string) => `${REDEMPTION_CODE_PREFIX}-${random.slice(0, 8)}-${random.slice(8)}`;

/** A new code, `LK-<8>-<4>`. */
export const newRedemptionCode = (): string => canonical(randomHumanCode(RANDOM_LENGTH));

/**
 * A code as people type it, in its canonical form, or null when it cannot be one. Case, spaces and
 * dashes (anywhere, or missing) are forgiven, and so is a missing prefix.
 */
export function normaliseRedemptionCode(input: string): string | null {
  const compact = input.toUpperCase().replace(/[\s\-\u2010-\u2015_]+/g, '');
  const random =
    compact.length === REDEMPTION_CODE_PREFIX.length + RANDOM_LENGTH && compact.startsWith(REDEMPTION_CODE_PREFIX) ? compact.slice(REDEMPTION_CODE_PREFIX.length) : compact;
  return RANDOM_PART.test(random) ? canonical(random) : null;
}

/** Codes are stored and looked up by this hash only; the plain code is shown once, at generation. */
export const redemptionCodeHash = (canonicalCode: string): string => sha256Hex(`redemption-code:${canonicalCode}`);
