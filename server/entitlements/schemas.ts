import { z } from 'zod';
import { GivenInstant } from '../http/timestamp.js';

/** The actions of docs/contract.md's outcome table: one closed list. */
export const EVENT_ACTIONS = ['granted', 'noop', 'reactivated', 'revoked', 'duplicate', 'stale_skipped', 'unactionable'] as const;
export type EventAction = (typeof EVENT_ACTIONS)[number];

/**
 * `note` values. docs/contract.md names the first two; the others say what a `noop` changed (a trial turned
 * into a paid license or a subscription trial) and why an event was `unactionable`.
 */
export const EVENT_NOTES = ['trial_ended', 'trial_unaffected_by_store', 'trial_converted', 'subscription_trial_started', 'app_mismatch'] as const;
export type EventNote = (typeof EVENT_NOTES)[number];

export const WebhookParams = z.object({ webhook_token: z.string().max(128).describe('The per-app URL token of {webhook_url}') });

/** A store's permanent platform domain (`acme.myshopify.com`); compared case-insensitively. */
export const Shop = z
  .string()
  .trim()
  .toLowerCase()
  .min(1)
  .max(255)
  .regex(/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/, "must be the store's platform domain, e.g. acme.myshopify.com");

const ProductKey = z.string().trim().min(1).max(200);
const EventId = z.string().trim().min(1).max(255);
/** Within what PostgreSQL's timestamptz stores and answers show (a year 0000, or past 9999 once the offset is applied, would be a 500). */
const OccurredAt = GivenInstant.transform((v) => new Date(v)).pipe(z.date().min(new Date('1970-01-01T00:00:00Z'), 'must be 1970 or later'));

/**
 * Attribution never affects the decision: an empty string means absent, and a value of the wrong
 * type or shape is ignored (dropped), never a 400.
 */
const attribution = (pattern: RegExp, description: string) =>
  z
    .unknown()
    .optional()
    .transform((v) => (typeof v === 'string' && pattern.test(v.trim()) ? v.trim() : undefined))
    .describe(`${description}; attribution only. Empty means absent; a malformed value is ignored`);

const GID = /^gid:\/\/[A-Za-z0-9_-]{1,64}\/[A-Za-z0-9_]{1,64}\/[A-Za-z0-9_-]{1,64}(?:\?[^\s]{0,200})?$/;

export const ATTRIBUTION_FIELDS = ['source', 'subscription_gid', 'shop_gid', 'order_gid', 'order_number'] as const;

export const EntitlementEvent = z.object({
  app: ProductKey.describe("Must equal the app's product key; another value is recorded and answered `unactionable`"),
  shop: Shop.describe("The store's permanent platform domain: the license identity"),
  entitled: z.boolean().describe('The decision, a JSON boolean: true means the license should be active, false ends it'),
  event_id: EventId.describe('Unique per event; a repeat is answered `duplicate` with the original outcome'),
  occurred_at: OccurredAt.describe('ISO 8601 with an offset; an event older than one already applied for the shop is `stale_skipped`'),
  topic: z.string().max(200).nullish().describe('Audit only'),
  status: z.string().max(200).nullish().describe('Platform status, audit only; never used for the decision'),
  subscription_name: z.string().max(200).nullish().describe('Plan name, stored for display'),
  trial: z.boolean().optional().describe("true during the subscription's free trial: no fee until an event without it"),
  test: z.boolean().optional().describe('A test subscription: the full flow runs, nothing is billed, and no trial state is kept'),
  customer_email: z
    .unknown()
    .optional()
    .transform((v) => (typeof v === 'string' && z.email().max(254).safeParse(v.trim()).success ? v.trim() : undefined))
    .describe('When present, the standard delivery email goes to it (once per address); a malformed address is ignored'),
  source: attribution(/^[\x20-\x7e]{1,100}$/, 'Sales channel label'),
  subscription_gid: attribution(GID, 'gid://... of the subscription'),
  shop_gid: attribution(GID, 'gid://... of the shop'),
  order_gid: attribution(GID, 'gid://... of the order'),
  order_number: attribution(/^#?\d{1,20}$/, 'Order number, digits'),
});
export type EntitlementEventInput = z.infer<typeof EntitlementEvent>;

export const EventOutcome = z.object({
  ok: z.boolean().describe('false only for `unactionable`: acknowledged and recorded, not acted on'),
  action: z.enum(EVENT_ACTIONS),
  event_id: z.string(),
  license_key: z.string().nullable().describe('On grant-type results (granted, reactivated, noop with a license) and their duplicates'),
  delivery_url: z.string().nullable().describe('The permanent delivery page, {delivery_url_base}/d/<token>; with license_key'),
  note: z.enum(EVENT_NOTES).nullable(),
  original_action: z.enum(EVENT_ACTIONS).optional().describe('On `duplicate`: the action first answered to this event_id'),
});
export type EventOutcomeView = z.infer<typeof EventOutcome>;

// Companion endpoints.

export const EntitlementQuery = z.object({ shop: Shop, app: ProductKey.optional().describe('When given, must equal the product key (else 409)') });

export const EntitlementView = z.object({
  ok: z.boolean(),
  shop: z.string(),
  entitled: z.boolean().describe('The license is ACTIVE now'),
  status: z.enum(['ACTIVE', 'REVOKED', 'EXPIRED', 'DEMO']).nullable().describe('null: no license for the shop'),
  trial: z.boolean().describe('A subscription trial or a no-commitment trial, still running'),
  trial_kind: z.enum(['subscription', 'no_commitment']).nullable(),
  license_key: z.string().nullable(),
  delivery_url: z.string().nullable(),
  expires_at: z.iso.datetime().nullable().describe('A no-commitment trial: null until it first runs on a machine, then 14 days on'),
});

export const DeliveryEmailBody = z.object({
  shop: Shop,
  email: z.email().max(254).nullable().describe('null clears the stored address'),
  app: z.string().max(200).optional().describe('A mismatch with the product key is accepted and recorded'),
});

export const DeliveryEmailResult = z.object({
  ok: z.boolean(),
  shop: z.string(),
  email: z.string().nullable(),
  email_sent: z.boolean().describe('false when cleared, when this address was already sent the delivery email, or the license is not active'),
  app_mismatch: z.boolean(),
});

export const TrialBody = z.object({
  shop: Shop,
  event_id: EventId,
  occurred_at: OccurredAt,
  app: ProductKey.optional().describe('When given, must equal the product key (else 409)'),
});

export const TrialResult = EntitlementView.extend({
  action: z.enum(['granted', 'noop']).describe('granted: a no-commitment trial was minted; noop: the shop already has a license, whose state is echoed'),
  event_id: z.string(),
});

export const RedactBody = z.object({ shop: Shop, app: ProductKey, force: z.boolean().optional() });

export const RedactResult = z.object({
  ok: z.boolean(),
  shop: z.string(),
  redacted: z.boolean().describe('false: nothing was stored for this shop (or it was already redacted)'),
  license_status: z.enum(['ACTIVE', 'REVOKED', 'EXPIRED', 'DEMO']).nullable(),
  removed: z.array(z.string()),
  kept: z.array(z.string()),
});

export const ResetDevicesBody = z.object({ shop: Shop, app: ProductKey });

export const ResetDevicesResult = z.object({
  ok: z.boolean(),
  shop: z.string(),
  devices_removed: z.number().int(),
  resets_remaining: z.number().int(),
  next_reset_available_at: z.iso.datetime().describe('Now when a reset is left, else when the oldest of the last 3 leaves the 30-day window'),
});

// Developer settings.

export const AppIdParams = z.object({ app_id: z.string().max(64) });

export const EnabledWebhook = z.object({
  webhook_url: z.string().describe('Shown once: POST events here; the companion endpoints are below it'),
  secret: z.string().describe('Shown once: send it as X-MerchantOps-Secret'),
  product_key: z.string().nullable().describe('Events must carry it as `app`; null until set with PUT /v1/apps/{app_id}'),
});

export const RotatedSecret = z.object({
  secret: z.string().describe('Shown once'),
  previous_secret_expires_at: z.iso.datetime().describe('The secret replaced keeps working until then (24 hours)'),
});

export const WebhookStatus = z.object({
  enabled: z.boolean(),
  product_key: z.string().nullable(),
  enabled_at: z.iso.datetime().nullable(),
  secret_rotated_at: z.iso.datetime().nullable(),
  previous_secret_expires_at: z.iso.datetime().nullable(),
});
