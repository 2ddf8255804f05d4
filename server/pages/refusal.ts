import type { ErrorCode } from '../errors.js';
import { escapeHtml as e } from './html-page.js';

/**
 * What a customer can do about a refusal a hosted form shows, by its error code: the API's message
 * says what went wrong, this the next step. Codes a form cannot meet have none.
 */
const ADVICE: Partial<Record<ErrorCode, string>> = {
  REDEMPTION_CODE_NOT_FOUND: 'Copy the code from your receipt and paste it here, to rule out a typo. If it is still not found, contact the seller where you bought it.',
  REDEMPTION_CODE_ALREADY_REDEEMED:
    'A code works once. If you redeemed it yourself, your license key was shown then and, if you gave an email address, sent there (look in your spam folder too). Otherwise contact the seller where you bought it.',
  REDEMPTION_CODE_EXPIRED: 'Contact the seller where you bought the code: they can give you a new one.',
  REDEMPTION_CODE_REVOKED: 'Contact the seller where you bought the code: they can tell you why, and give you a new one.',
  REDEMPTION_RATE_LIMITED: 'Wait a minute, then submit the form again.',
  RATE_LIMITED: 'Wait a minute, then submit the form again.',
  INVALID_LICENSE_KEY: 'Make sure the file was saved by the app you bought, with your license key. If your license was cancelled or refunded, contact the seller.',
  LICENSE_EXPIRED: 'Renew your license with the seller, then let the app save a new request file and upload it here.',
  DEVICE_LIMIT_EXCEEDED: 'Deactivate the app on a computer you no longer use (from the app, or ask the seller to reset your devices), then upload the same request file again.',
  TRIAL_ALREADY_USED: 'Buy a license to keep using the app on this computer.',
  BUILD_NOT_FOUND: 'Install the current version of the app from your download link, then let it save a new request file.',
};

/** The refusal a form shows above itself: the reason, and what to do when there is advice for it. `id` names the block for the tests and the reader. */
export function refusalBlock(id: string, refusal: { message: string; code?: string }): string {
  const advice = refusal.code ? ADVICE[refusal.code as ErrorCode] : undefined;
  return `<div id="${id}" class="alert" role="alert"><p><strong>${e(refusal.message)}</strong></p>${advice ? `\n<p class="advice">${e(advice)}</p>` : ''}</div>\n`;
}
