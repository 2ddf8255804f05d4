import { z } from 'zod';
import { PLANS } from './plan.js';

const Email = z.string().trim().toLowerCase().pipe(z.email().max(254));
const Password = z.string().min(10, 'must be at least 10 characters').max(200);
/** A 6-digit TOTP code or a backup code (`xxxxx-xxxxx`). */
const TwoFactorCode = z.string().trim().min(6).max(32);

export const RegisterBody = z.strictObject({
  email: Email,
  password: Password,
  company_name: z.string().trim().min(1).max(200),
});

export const LoginBody = z.strictObject({ email: Email, password: z.string().min(1).max(200) });
export const VerifyTwoFactorBody = z.strictObject({ challenge_token: z.string().min(1).max(2000), code: TwoFactorCode });
export const RefreshBody = z.strictObject({ refresh_token: z.string().min(1).max(500) });
export const ConfirmTwoFactorBody = z.strictObject({ code: TwoFactorCode });
export const DisableTwoFactorBody = z.strictObject({
  password: z.string().min(1).max(200),
  code: TwoFactorCode.describe('A current TOTP code or an unused backup code'),
});

export const Developer = z.object({
  id: z.string(),
  email: z.string(),
  company_name: z.string(),
  two_factor_enabled: z.boolean(),
  plan: z.enum(PLANS).describe('The plan now: Pro stays on during the grace period after a failed renewal and ends by itself when it passes unpaid'),
  plan_grace_until: z.iso.datetime().nullable().describe('While a failed Pro renewal is retried: when Pro ends unless it is paid; otherwise null'),
  created_at: z.iso.datetime(),
});

export const RegisteredDeveloper = Developer.pick({ id: true, email: true, company_name: true, created_at: true });

export const TokenPair = z.object({
  access_token: z.string(),
  refresh_token: z.string(),
  token_type: z.literal('bearer'),
  expires_in: z.number().int(),
});

export const LoginResult = z.union([
  TokenPair,
  z.object({
    two_factor_required: z.literal(true),
    challenge_token: z.string().describe('Send with a TOTP or backup code to /v1/auth/login/verify-2fa within 5 minutes'),
  }),
]);

export const ApiKeyResult = z.object({ api_key: z.string().describe('Shown once; store it now') });
export const TwoFactorSetup = z.object({ provisioning_uri: z.string(), backup_codes: z.array(z.string()) });
export const TwoFactorStatus = z.object({ two_factor_enabled: z.boolean(), backup_codes_remaining: z.number().int() });
