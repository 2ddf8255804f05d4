import type Koa from 'koa';
import { setPageHeaders } from '../http/pagination.js';
import { defineRoute } from '../http/route.js';
import { REDEMPTION_CODE_SHAPE } from './codes.js';
import * as s from './schemas.js';
import type { Redemption } from './service.js';
import type { BatchRow } from './store.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

const batchView = ({ developer_id: _developer, ...b }: BatchRow) => ({
  ...b,
  max_concurrent: b.seat_model === 'floating' ? b.device_limit : null,
  codes_expire_at: iso(b.codes_expire_at),
  created_at: b.created_at.toISOString(),
});

/** A spreadsheet must not run a cell as a formula: a text cell starting with one of these is prefixed with `'`. */
const csvCell = (value: string) => {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
};

function codesCsv(batch: { id: string; channel: string; label: string; codes: string[] }, ctx: Koa.Context): string {
  ctx.set('Content-Disposition', `attachment; filename="redemption-codes-${batch.id}.csv"`);
  const rest = [batch.id, batch.channel, batch.label].map(csvCell).join(',');
  return `code,batch_id,channel,label\r\n${batch.codes.map((code) => `${code},${rest}\r\n`).join('')}`;
}

const RULES =
  `Codes look like ${REDEMPTION_CODE_SHAPE}: the service-wide prefix \`LK\`, then 12 CSPRNG characters from an alphabet without look-alikes (no 0 O 1 I L). ` +
  'A code is single-use and stored only as its SHA-256; statuses are available, redeemed, revoked and expired (an available code past `codes_expire_at`).';

export function redemptionRoutes(redemption: Redemption) {
  const tag = 'Redemption codes';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/apps/{app_id}/redemption-batches',
      operationId: 'createRedemptionBatch',
      scope: 'licenses',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'Generate a batch of redemption codes for a marketplace',
      description:
        `${RULES} The plain codes are in this response only (JSON \`codes\`, or a CSV file \`code,batch_id,channel,label\` with \`Accept: text/csv\`) ` +
        'and are never shown again; keep the export. `quantity` is 1 to 10,000 per batch. Creating codes is free: the 4 USD fee is charged when a code is ' +
        'redeemed (never for trial batches). Paid batches (perpetual, subscription) need an active Pro subscription; the free plan may create trial batches (403 PLAN_REQUIRED otherwise).',
      params: s.AppIdParams,
      body: s.CreateBatchBody,
      response: s.CreatedBatch,
      status: 201,
      errors: [403, 404],
      alternative: { contentType: 'text/csv', description: 'One line per code: code,batch_id,channel,label', render: codesCsv },
      handler: async ({ actor, params, body }) => {
        const batch = await redemption.createBatch(actor.developerId, params.app_id, body);
        return { ...batchView(batch), codes: batch.codes };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/apps/{app_id}/redemption-batches',
      operationId: 'listRedemptionBatches',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: "List an app's redemption batches with their codes counted by status",
      description: "Oldest first. The codes themselves are never listed (only their hashes are stored). `expired` counts available codes past the batch's `codes_expire_at`.",
      params: s.AppIdParams,
      query: s.ListBatchesQuery,
      response: s.BatchWithCounts.array(),
      paginated: true,
      errors: [404],
      handler: async ({ actor, params, query, ctx }) => {
        const { rows, total } = await redemption.listBatches(actor.developerId, params.app_id, query);
        setPageHeaders(ctx, query, total);
        return rows.map(({ available, redeemed, revoked, expired, total: _total, ...b }) => ({ ...batchView(b), counts: { available, redeemed, revoked, expired } }));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/redemption-codes/{code}/revoke',
      operationId: 'revokeRedemptionCode',
      scope: 'licenses',
      securesAccount: true,
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'Revoke one available redemption code',
      description:
        "Only your own codes (another developer's code is 404 REDEMPTION_CODE_NOT_FOUND). Revoking a revoked code answers it again; a redeemed or expired code is " +
        '409 REDEMPTION_CODE_NOT_REVOCABLE (to take back a redeemed code, revoke its license). A customer redeeming a revoked code gets the revoked message.',
      params: s.CodeParams,
      response: s.RevokedCode,
      errors: [404, 409],
      handler: async ({ actor, params }) => {
        const revoked = await redemption.revokeCode(actor.developerId, params.code);
        return { ...revoked, revoked_at: revoked.revoked_at.toISOString() };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/redemption-batches/{batch_id}/revoke-all',
      operationId: 'revokeRedemptionBatch',
      scope: 'licenses',
      securesAccount: true,
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'Revoke every available code of a batch (Revoke All)',
      description: 'Redeemed, already revoked and expired codes are left as they are; `revoked` says how many codes this call revoked.',
      params: s.BatchIdParams,
      response: s.RevokedBatch,
      errors: [404],
      handler: async ({ actor, params }) => ({ batch_id: params.batch_id, revoked: await redemption.revokeAll(actor.developerId, params.batch_id) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/public/redeem',
      operationId: 'redeemCode',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'redemption',
      summary: 'Redeem a code for a license key and download',
      description:
        `${RULES} Case, spaces, missing dashes and a missing prefix are forgiven. Success (201) mints the batch's license (source = the batch's channel), charges the fee once ` +
        '(not for trial batches), records the email and time on the code, and with `email` and a READY build queues the delivery email. Failures: ' +
        '404 REDEMPTION_CODE_NOT_FOUND (typo or wrong format), 409 REDEMPTION_CODE_ALREADY_REDEEMED, 410 REDEMPTION_CODE_EXPIRED, 410 REDEMPTION_CODE_REVOKED, ' +
        'and 409 REDEMPTION_UNAVAILABLE for a paid code whose seller has no active Pro subscription now (the code stays Available). ' +
        "At most 5 attempts a minute per address, successful or not, shared with the hosted page's form; then 429 REDEMPTION_RATE_LIMITED with `Retry-After: 60`.",
      body: s.RedeemBody,
      response: s.Redeemed,
      status: 201,
      errors: [404, 409, 410],
      handler: async ({ body }) => redemption.redeem(body.code, body.email ?? null),
    }),
  ];
}
