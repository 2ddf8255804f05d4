import { z } from 'zod';
import { defineRoute } from '../http/route.js';
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
  created_at: d.created_at.toISOString(),
});

export function accountRoutes(accounts: AccountsService) {
  const tag = 'Developer account';
  return [
    defineRoute({
      method: 'post', path: '/v1/auth/register', operationId: 'register', tag, auth: 'none', rateLimit: 'auth',
      summary: 'Create a developer account', body: s.RegisterBody, response: s.RegisteredDeveloper, status: 201, errors: [409],
      handler: async ({ body }) => developerView(await accounts.register(body)),
    }),
    defineRoute({
      method: 'post', path: '/v1/auth/login', operationId: 'login', tag, auth: 'none', rateLimit: 'auth',
      summary: 'Log in; with 2FA on, answers a challenge to complete at /v1/auth/login/verify-2fa',
      body: s.LoginBody, response: s.LoginResult, errors: [401],
      handler: ({ body }) => accounts.login(body.email, body.password),
    }),
    defineRoute({
      method: 'post', path: '/v1/auth/login/verify-2fa', operationId: 'verifyTwoFactorLogin', tag, auth: 'none', rateLimit: 'auth',
      summary: 'Complete a 2FA login with a TOTP code or a backup code', body: s.VerifyTwoFactorBody, response: s.TokenPair,
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
      method: 'post', path: '/v1/auth/refresh', operationId: 'refreshSession', tag, auth: 'none', rateLimit: 'auth',
      summary: 'Exchange a refresh token (valid 30 days, single use) for a new token pair',
      description: 'The refresh token rotates on every use. Presenting a rotated token again revokes every token descended from the same login.',
      body: s.RefreshBody, response: s.TokenPair, errors: [401],
      handler: ({ body }) => accounts.refresh(body.refresh_token),
    }),
    defineRoute({
      method: 'get', path: '/v1/auth/me', operationId: 'getMe', tag, auth: 'developer', rateLimit: 'auth',
      summary: 'The authenticated developer', response: s.Developer,
      handler: async ({ actor }) => developerView(await accounts.me(actor.developerId)),
    }),
    defineRoute({
      method: 'post', path: '/v1/auth/api-keys/rotate', operationId: 'rotateApiKey', tag, auth: 'developer', rateLimit: 'auth',
      summary: 'Generate a new API key; the previous key stops working at once', response: s.ApiKeyResult,
      description: 'The answer comes once no server process accepts the previous key any more (each drops it from its memory first).',
      handler: async ({ actor }) => ({ api_key: await accounts.rotateApiKey(actor.developerId) }),
    }),
    defineRoute({
      method: 'post', path: '/v1/auth/2fa/setup', operationId: 'setupTwoFactor', tag, auth: 'developer', rateLimit: 'auth',
      summary: 'Start 2FA setup: a provisioning URI and 10 single-use backup codes (shown once)', response: s.TwoFactorSetup, errors: [409],
      handler: ({ actor }) => accounts.setupTwoFactor(actor.developerId),
    }),
    defineRoute({
      method: 'post', path: '/v1/auth/2fa/confirm', operationId: 'confirmTwoFactor', tag, auth: 'developer', rateLimit: 'auth',
      summary: 'Turn 2FA on with a code from the authenticator', body: s.ConfirmTwoFactorBody, response: s.TwoFactorStatus, errors: [409],
      handler: ({ actor, body }) => accounts.confirmTwoFactor(actor.developerId, body.code),
    }),
    defineRoute({
      method: 'post', path: '/v1/auth/2fa/disable', operationId: 'disableTwoFactor', tag, auth: 'developer', rateLimit: 'auth',
      summary: 'Turn 2FA off; needs the password and a TOTP or backup code', body: s.DisableTwoFactorBody, response: s.TwoFactorStatus, errors: [409],
      handler: ({ actor, body }) => accounts.disableTwoFactor(actor.developerId, body.password, body.code),
    }),
    defineRoute({
      method: 'get', path: '/v1/auth/2fa/status', operationId: 'twoFactorStatus', tag, auth: 'developer', rateLimit: 'auth',
      summary: 'Whether 2FA is on and how many backup codes are left', response: s.TwoFactorStatus,
      handler: ({ actor }) => accounts.twoFactorStatus(actor.developerId),
    }),
  ];
}

export function adminRoutes(accounts: AccountsService) {
  return [
    defineRoute({
      method: 'put', path: '/v1/admin/developers/{developer_id}/plan', operationId: 'setDeveloperPlan', tag: 'Operator',
      auth: 'admin', rateLimit: 'general', errors: [404],
      summary: 'Set a developer plan (operator only; enabled by LATCHKEY_ADMIN_TOKEN)',
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
