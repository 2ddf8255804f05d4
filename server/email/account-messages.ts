import { paragraphsEmail, type RenderedEmail } from './html.js';

/** Emails to a developer about the security of their own account. */

/** "2025-03-09 14:05 UTC": unambiguous whatever the reader's locale. */
const utcMinute = (at: Date) => `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** Where a developer resets a password they lost, or that someone else knows. */
const resetPageUrl = (publicBaseUrl: string) => `${publicBaseUrl}/reset-password`;

export interface TwoFactorLockedDetails {
  email: string;
  wrongCodes: number;
  lockedUntil: Date;
  publicBaseUrl: string;
}

/** Someone who knew the password sent wrong two-factor codes until second-factor checks locked. */
export function renderTwoFactorLockedEmail(d: TwoFactorLockedDetails): RenderedEmail {
  return paragraphsEmail('Latchkey: two-factor sign-in locked after repeated wrong codes', [
    `${d.wrongCodes} wrong two-factor codes were entered for your Latchkey account (${d.email}) within an hour.`,
    `Signing in with a two-factor code is locked until ${utcMinute(d.lockedUntil)}.`,
    'If this was not you, someone knows your password. Choose a new one now (this also lifts the lock, and ends every session): ' + resetPageUrl(d.publicBaseUrl),
  ]);
}

export interface PasswordResetDetails {
  email: string;
  /** The single-use link with its token. */
  link: string;
  validMinutes: number;
  publicBaseUrl: string;
}

export function renderPasswordResetEmail(d: PasswordResetDetails): RenderedEmail {
  return paragraphsEmail('Latchkey: reset your password', [
    `Someone asked to reset the password of your Latchkey account (${d.email}). To choose a new password, open this link within ${d.validMinutes} minutes; it works once:`,
    d.link,
    'If you did not ask for this, ignore this email: your password stays as it is.',
  ]);
}

export interface ApiKeySummary {
  prefix: string;
  name: string;
  scopes: string[];
  lastUsedAt: Date | null;
}

export interface PasswordChangedDetails {
  email: string;
  /** How: a reset through an emailed link ends every session; a change while signed in, every other one. */
  how: 'reset' | 'changed';
  apiKeys: ApiKeySummary[];
  publicBaseUrl: string;
}

/** After a password change: what ended, and the API keys that still work, for the owner to review. */
export function renderPasswordChangedEmail(d: PasswordChangedDetails): RenderedEmail {
  const keys = d.apiKeys.map((k) => `${k.prefix} "${k.name}" (${k.scopes.join(', ')}): last used ${k.lastUsedAt ? utcMinute(k.lastUsedAt) : 'never'}`);
  return paragraphsEmail('Latchkey: your password was changed', [
    d.how === 'reset'
      ? `The password of your Latchkey account (${d.email}) was reset through an emailed link. Every session was signed out.`
      : `The password of your Latchkey account (${d.email}) was changed. Every other session was signed out.`,
    keys.length
      ? `API keys keep working across a password change. Review them, and revoke any you do not recognise in the portal's settings (${d.publicBaseUrl}/portal#/settings):`
      : 'Your account has no API keys.',
    ...keys,
    `If you did not do this, reset your password now: ${resetPageUrl(d.publicBaseUrl)}`,
  ]);
}
