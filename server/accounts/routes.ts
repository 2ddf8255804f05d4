import type Koa from 'koa';
import { z } from 'zod';
import { sessionOf } from '../http/auth.js';
import { PageQuery, setPageHeaders } from '../http/pagination.js';
import { RATE_LIMITS, rateSubject, type RateLimiter } from '../http/rate-limit.js';
import { defineRoute } from '../http/route.js';
import { MAX_ACTIVE_API_KEYS } from './api-keys.js';
import { PASSWORD_RESET_TTL_MINUTES, RESET_PAGE_PATH } from './passwords.js';
import * as s from './schemas.js';
import { TWO_FACTOR_ATTEMPTS, TWO_FACTOR_LOCK_MS } from './second-factor.js';
import { CHALLENGE_MAX_ATTEMPTS, CHALLENGE_TTL_SECONDS, type AccountsService } from './service.js';
import { PLANS } from './plan.js';
import type { DeveloperRow } from './store.js';

const developerView = (d: DeveloperRow & { plan_grace_until?: Date | null }) => ({
  id: d.id,
  email: d.email,
  company_name: d.company_name,
  two_factor_enabled: d.two_factor_enabled,
  plan: d.plan,
  plan_grace_until: d.plan_grace_until?.toISOString() ?? null,
  deactivated_at: d.deactivated_at?.toISOString() ?? null,
  created_at: d.created_at.toISOString(),
});

/** Counts a reset request against the email's limit, then sends the link if an account has the address (the API and the hosted page alike). */
export async function requestPasswordReset(accounts: AccountsService, rateLimiter: RateLimiter, ctx: Koa.Context, email: string): Promise<void> {
  await rateLimiter.admitAlso(ctx, 'password_reset', rateSubject.email(email));
  await accounts.requestPasswordReset(email);
}

const REAUTHENTICATION =
  'Needs a signed-in session (an access token; API keys are refused with 403 SESSION_REQUIRED) and, in the body, the current `password` or a ' +
  'current two-factor `code` (403 REAUTHENTICATION_REQUIRED without either; a wrong one is 401 INVALID_CREDENTIALS or INVALID_TWO_FACTOR_CODE).';

export function accountRoutes(accounts: AccountsService, rateLimiter: RateLimiter) {
  const tag = 'Developer account';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/auth/register',
      operationId: 'register',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: 'Create a developer account',
      body: s.RegisterBody,
      response: s.RegisteredDeveloper,
      status: 201,
      errors: [409],
      handler: async ({ body }) => developerView(await accounts.register(body)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/login',
      operationId: 'login',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: 'Log in; with 2FA on, answers a challenge to complete at /v1/auth/login/verify-2fa',
      description:
        `Besides the address's limit, an email takes ${RATE_LIMITS.sign_in.limit} sign-in attempts in ${RATE_LIMITS.sign_in.windowSeconds / 60} minutes, ` +
        'from any address, successful or not (429): guessing one password from many addresses is held to that too. An IPv6 address counts as its /64.',
      body: s.LoginBody,
      response: s.LoginResult,
      errors: [401],
      handler: async ({ body, ctx }) => {
        await rateLimiter.admitAlso(ctx, 'sign_in', rateSubject.email(body.email));
        return accounts.login(body.email, body.password);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/login/verify-2fa',
      operationId: 'verifyTwoFactorLogin',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: 'Complete a 2FA login with a TOTP code or a backup code',
      body: s.VerifyTwoFactorBody,
      response: s.TokenPair,
      description:
        'A challenge completes one login: an invalid, expired or already used one is 401 INVALID_CREDENTIALS. A wrong code is ' +
        `401 INVALID_TWO_FACTOR_CODE and leaves the challenge usable until it expires (${CHALLENGE_TTL_SECONDS / 60} minutes after login), ` +
        `for ${CHALLENGE_MAX_ATTEMPTS} codes in all: the next attempt is 401 INVALID_CREDENTIALS whatever its code, and the login starts again. ` +
        `An account takes ${TWO_FACTOR_ATTEMPTS.limit} codes an hour by any route; a wrong one past that locks its second-factor checks for ` +
        `${TWO_FACTOR_LOCK_MS / 3_600_000} hour (429 TWO_FACTOR_LOCKED with Retry-After) and emails the owner. A TOTP code is accepted once: ` +
        'a code whose time step was already used, by any check of the account, is refused.',
      errors: [401],
      handler: ({ body }) => accounts.verifyTwoFactorLogin(body.challenge_token, body.code),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/refresh',
      operationId: 'refreshSession',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: 'Exchange a refresh token (valid 30 days, single use) for a new token pair',
      description: 'The refresh token rotates on every use. Presenting a rotated token again ends the whole session it belongs to: its refresh and access tokens.',
      body: s.RefreshBody,
      response: s.TokenPair,
      errors: [401],
      handler: ({ body }) => accounts.refresh(body.refresh_token),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/password-reset',
      operationId: 'requestPasswordReset',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: 'Email a single-use password reset link',
      description:
        `Answers 202 whether or not an account has this email. When one has, it is sent a link to ${RESET_PAGE_PATH} valid ` +
        `${PASSWORD_RESET_TTL_MINUTES} minutes and usable once (complete it there, or with POST /v1/auth/password-reset/confirm). ` +
        `Besides the address's limit, an email takes ${RATE_LIMITS.password_reset.limit} requests an hour (429).`,
      body: s.PasswordResetRequestBody,
      response: s.Accepted,
      status: 202,
      handler: async ({ body, ctx }) => {
        await requestPasswordReset(accounts, rateLimiter, ctx, body.email);
        return { detail: 'If an account has this email, a password reset link is on its way' };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/password-reset/confirm',
      operationId: 'resetPassword',
      tag,
      auth: 'none',
      rateLimit: 'auth',
      summary: "Set a new password with an emailed reset link's token",
      description:
        `The token works once and for ${PASSWORD_RESET_TTL_MINUTES} minutes (401 INVALID_RESET_TOKEN otherwise). Every session of the account ends (refresh and access ` +
        'tokens, portal sessions), a lock of its second-factor checks lifts, and the owner is emailed the API keys that still work, to review them.',
      body: s.PasswordResetBody,
      errors: [401],
      handler: ({ body }) => accounts.resetPassword(body.token, body.new_password),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/auth/me',
      operationId: 'getMe',
      tag,
      auth: 'developer',
      scope: 'read',
      rateLimit: 'auth',
      summary: 'The authenticated developer',
      response: s.Developer,
      handler: async ({ actor }) => developerView(await accounts.me(actor.developerId)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/password',
      operationId: 'changePassword',
      tag,
      auth: 'developer',
      scope: 'session',
      securesAccount: true,
      rateLimit: 'auth',
      summary: 'Change the password; every other session ends',
      description: `${REAUTHENTICATION} Every other session of the account ends, and the owner is emailed the API keys that still work, to review them.`,
      body: s.ChangePasswordBody,
      errors: [401, 403],
      handler: ({ actor, body }) => accounts.changePassword(actor.developerId, sessionOf(actor), body),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/auth/api-keys',
      operationId: 'listApiKeys',
      tag,
      auth: 'developer',
      scope: 'read',
      rateLimit: 'auth',
      summary: 'Your active API keys, oldest first: name, prefix, scopes, last use; never the secret',
      query: PageQuery,
      response: z.array(s.ApiKey),
      paginated: true,
      handler: async ({ actor, query, ctx }) => {
        const keys = await accounts.listApiKeys(actor.developerId);
        setPageHeaders(ctx, query, keys.length);
        return keys.slice(query.offset, query.offset + query.limit);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/api-keys',
      operationId: 'createApiKey',
      tag,
      auth: 'developer',
      scope: 'session',
      rateLimit: 'auth',
      summary: 'Create an API key with a name and scopes',
      description: `${REAUTHENTICATION} An account has at most ${MAX_ACTIVE_API_KEYS} active keys (409 API_KEY_LIMIT_REACHED).`,
      body: s.ApiKeyBody,
      response: s.CreatedApiKey,
      status: 201,
      errors: [401, 403, 409],
      handler: ({ actor, body }) => accounts.createApiKey(actor.developerId, body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/api-keys/rotate',
      operationId: 'rotateApiKey',
      tag,
      auth: 'developer',
      scope: 'session',
      securesAccount: true,
      rateLimit: 'auth',
      summary: 'Generate a new API key that replaces every active one; those stop working at once',
      response: s.CreatedApiKey,
      description:
        `${REAUTHENTICATION} The new key has the \`name\` and \`scopes\` sent (default "API key" and \`["admin"]\`, what every key could do before keys had scopes). ` +
        'The answer comes once no server process accepts the replaced keys any more (each drops them from its memory first).',
      body: s.ApiKeyBody,
      errors: [401, 403],
      handler: ({ actor, body }) => accounts.rotateApiKey(actor.developerId, body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/api-keys/{key_id}/revoke',
      operationId: 'revokeApiKey',
      tag,
      auth: 'developer',
      scope: 'session',
      securesAccount: true,
      rateLimit: 'auth',
      summary: 'Revoke one API key; it stops working at once',
      description: `${REAUTHENTICATION} The answer comes once no server process accepts the key any more.`,
      params: s.ApiKeyParams,
      body: s.ReauthenticationBody,
      errors: [401, 403, 404],
      handler: ({ actor, params, body }) => accounts.revokeApiKey(actor.developerId, params.key_id, body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/2fa/setup',
      operationId: 'setupTwoFactor',
      tag,
      auth: 'developer',
      scope: 'session',
      securesAccount: true,
      rateLimit: 'auth',
      summary: 'Start 2FA setup: a provisioning URI and 10 single-use backup codes (shown once)',
      response: s.TwoFactorSetup,
      description: REAUTHENTICATION,
      body: s.ReauthenticationBody,
      errors: [401, 403, 409],
      handler: ({ actor, body }) => accounts.setupTwoFactor(actor.developerId, body),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/2fa/confirm',
      operationId: 'confirmTwoFactor',
      tag,
      auth: 'developer',
      scope: 'session',
      securesAccount: true,
      rateLimit: 'auth',
      summary: 'Turn 2FA on with a code from the authenticator; every other session ends',
      body: s.ConfirmTwoFactorBody,
      response: s.TwoFactorStatus,
      description: 'Needs a signed-in session (API keys are refused with 403 SESSION_REQUIRED), the one that started the setup with its re-authentication.',
      errors: [401, 403, 409],
      handler: ({ actor, body }) => accounts.confirmTwoFactor(actor.developerId, sessionOf(actor), body.code),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/2fa/disable',
      operationId: 'disableTwoFactor',
      tag,
      auth: 'developer',
      scope: 'session',
      securesAccount: true,
      rateLimit: 'auth',
      summary: 'Turn 2FA off; needs the password and a TOTP or backup code',
      body: s.DisableTwoFactorBody,
      response: s.TwoFactorStatus,
      description: 'Needs a signed-in session (API keys are refused with 403 SESSION_REQUIRED).',
      errors: [401, 403, 409],
      handler: ({ actor, body }) => accounts.disableTwoFactor(actor.developerId, body.password, body.code),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/auth/2fa/status',
      operationId: 'twoFactorStatus',
      tag,
      auth: 'developer',
      scope: 'read',
      rateLimit: 'auth',
      summary: 'Whether 2FA is on and how many backup codes are left',
      response: s.TwoFactorStatus,
      handler: ({ actor }) => accounts.twoFactorStatus(actor.developerId),
    }),
  ];
}

export function adminRoutes(accounts: AccountsService) {
  return [
    defineRoute({
      method: 'put',
      path: '/v1/admin/developers/{developer_id}/plan',
      operationId: 'setDeveloperPlan',
      tag: 'Operator',
      auth: 'admin',
      rateLimit: 'general',
      errors: [404],
      summary: 'Set a developer plan (operator only; enabled by LATCHKEY_ADMIN_TOKEN)',
      description: 'Ends any grace period. Setting `pro` also reactivates an account deactivated by the deletion of its subscription.',
      params: z.object({ developer_id: z.string().max(64) }),
      body: z.strictObject({ plan: z.enum(PLANS) }),
      response: z.object({ id: z.string(), plan: z.enum(PLANS) }),
      handler: async ({ params, body }) => {
        const dev = await accounts.setPlan(params.developer_id, body.plan);
        return { id: dev.id, plan: dev.plan };
      },
    }),
  ];
}
