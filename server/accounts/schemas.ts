import { z } from 'zod';
import { API_KEY_SCOPES } from '../http/auth.js';
import { PLANS } from './plan.js';

const Email = z.string().trim().toLowerCase().pipe(z.email().max(254));
export const NewPassword = z.string().min(10, 'must be at least 10 characters').max(200);
/** A 6-digit TOTP code or a backup code (`xxxxx-xxxxx`). */
const TwoFactorCode = z.string().trim().min(6).max(32);

export const RegisterBody = z.strictObject({
  email: Email,
  password: NewPassword,
  company_name: z.string().trim().min(1).max(200),
});

export const LoginBody = z.strictObject({ email: Email, password: z.string().min(1).max(200) });
export const VerifyTwoFactorBody = z.strictObject({ challenge_token: z.string().min(1).max(2000), code: TwoFactorCode });
export const RefreshBody = z.strictObject({ refresh_token: z.string().min(1).max(500) });
export const ConfirmTwoFactorBody = z.strictObject({ code: TwoFactorCode.describe('The code the new authenticator shows') });
export const DisableTwoFactorBody = z.strictObject({
  password: z.string().min(1).max(200),
  code: TwoFactorCode.describe('A current TOTP code or an unused backup code'),
});

/** Re-authentication: a change to the account's security proves the person is there, with either. */
const Reauthentication = {
  password: z.string().min(1).max(200).optional().describe('Your current password; this or `code` is required'),
  code: TwoFactorCode.optional().describe('A current TOTP code or an unused backup code; this or `password` is required'),
};
export const ReauthenticationBody = z.strictObject(Reauthentication).default({});

const ApiKeyScopes = z
  .array(z.enum(API_KEY_SCOPES))
  .min(1)
  .max(API_KEY_SCOPES.length)
  .describe(
    'What the key may do (default `["admin"]`): `read` every GET; `licenses` license, activation, redemption-code and marketplace writes; `builds` builds, releases and update pushes; `admin` everything an API key may do',
  );
export const ApiKeyBody = z
  .strictObject({
    ...Reauthentication,
    name: z.string().trim().min(1).max(100).optional().describe('What the key is for, shown in the listing (default "API key")'),
    scopes: ApiKeyScopes.optional(),
  })
  .default({});
export const ApiKeyParams = z.object({ key_id: z.string().max(64).describe('The key id: its prefix without `lk_`') });
export const ApiKey = z.object({
  id: z.string(),
  prefix: z.string().describe('`lk_<id>`: how the key begins, to recognise it'),
  name: z.string(),
  scopes: z.array(z.enum(API_KEY_SCOPES)),
  created_at: z.iso.datetime(),
  last_used_at: z.iso.datetime().nullable().describe('The latest use, recorded at most once a minute; null: never used'),
});
export const CreatedApiKey = ApiKey.extend({ api_key: z.string().describe('Shown once; store it now') });

export const ChangePasswordBody = z.strictObject({ ...Reauthentication, new_password: NewPassword });
export const PasswordResetRequestBody = z.strictObject({ email: Email });
export const PasswordResetBody = z.strictObject({ token: z.string().min(1).max(200).describe('The `token` of the emailed link'), new_password: NewPassword });
export const Accepted = z.object({ detail: z.string() });

export const Developer = z.object({
  id: z.string(),
  email: z.string(),
  company_name: z.string(),
  two_factor_enabled: z.boolean(),
  plan: z.enum(PLANS).describe('The plan now: Pro stays on during the grace period after a failed renewal and ends by itself when it passes unpaid'),
  plan_grace_until: z.iso.datetime().nullable().describe('While a failed Pro renewal is retried: when Pro ends unless it is paid; otherwise null'),
  deactivated_at: z.iso
    .datetime()
    .nullable()
    .describe('When the Latchkey subscription was deleted, deactivating the account until a new one: changes answer 403 ACCOUNT_DEACTIVATED; otherwise null'),
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

export const TwoFactorSetup = z.object({ provisioning_uri: z.string(), backup_codes: z.array(z.string()) });
export const TwoFactorStatus = z.object({ two_factor_enabled: z.boolean(), backup_codes_remaining: z.number().int() });
