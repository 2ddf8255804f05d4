import { z } from 'zod';

export const ConnectStart = z.object({
  authorize_url: z.string().describe("Stripe's Connect OAuth authorize page: send the signed-in person's browser there"),
  expires_at: z.iso.datetime().describe('The authorization must come back before this (10 minutes)'),
});

/** What the processor's redirect carries back: `code` when the person approved, `error` when not; `state` always. */
export const ConnectCallbackQuery = z
  .object({
    state: z
      .string()
      .regex(/^[A-Za-z0-9_-]{43}$/, 'must be the state this server issued')
      .describe('The state of the authorize URL'),
    code: z
      .string()
      .regex(/^ac_[A-Za-z0-9_]{1,255}$/, 'must be an authorization code (ac_...)')
      .optional()
      .describe('The single-use authorization code'),
    error: z
      .string()
      .regex(/^[a-z_]{1,64}$/)
      .optional()
      .describe('`access_denied` when the person declined'),
    error_description: z.string().max(1000).optional(),
    scope: z.string().max(64).optional(),
  })
  .refine((q) => (q.code === undefined) !== (q.error === undefined), 'must carry either code or error');

export const PaymentAccount = z.object({
  connected: z.boolean(),
  account_id: z.string().nullable(),
  connected_at: z.iso.datetime().nullable(),
});

export const PublicPricing = z.object({
  base_fee_annual_usd: z.number(),
  license_fee_usd: z.number(),
  free_download_limit: z.number().int(),
  storage_fee_per_gb_month_usd: z.number(),
});

export const WebhookReceipt = z.object({
  received: z.literal(true),
  duplicate: z.boolean().describe('The event id was processed before; nothing changed'),
  outcome: z.string().describe('What processing did: fulfilled, already_fulfilled, applied, stale_skipped, ignored, ...'),
});

const Metadata = z
  .record(z.string(), z.string())
  .nullish()
  .transform((m) => m ?? {});
const Timestamp = z.number().int().nonnegative();

/** The envelope every Stripe event shares; `account` is set on events of connected accounts. */
export const ProcessorEvent = z.object({
  id: z.string().min(1).max(255),
  type: z.string().min(1).max(255),
  created: Timestamp,
  account: z
    .string()
    .regex(/^acct_/)
    .optional(),
  data: z.object({ object: z.unknown() }),
});

export const CheckoutSessionObject = z.object({ id: z.string().regex(/^cs_[A-Za-z0-9_]{1,255}$/) });

const SubscriptionId = z.string().regex(/^sub_[A-Za-z0-9_]{1,255}$/);
const SubscriptionDetails = z.object({ metadata: Metadata, subscription: SubscriptionId.nullish() }).nullish();

/**
 * An invoice: of a developer's Pro subscription (the developer id is in its or its subscription's
 * metadata), or on a connected account, of a buyer's subscription that pays for a license.
 */
export const InvoiceObject = z.object({
  customer: z.string().min(1).max(255),
  metadata: Metadata,
  parent: z.object({ subscription_details: SubscriptionDetails }).nullish(),
  subscription_details: SubscriptionDetails,
  /** The subscription the invoice bills, before API version 2025-03-31.basil (now `parent.subscription_details.subscription`). */
  subscription: SubscriptionId.nullish(),
  period_end: Timestamp.optional(),
  lines: z.object({ data: z.array(z.object({ period: z.object({ end: Timestamp }) })) }).optional(),
});

export const SubscriptionObject = z.object({
  /** Always sent by the processor; events without one are taken as about the developer's current subscription. */
  id: SubscriptionId.optional(),
  customer: z.string().min(1).max(255),
  status: z.string().max(64),
  metadata: Metadata,
});

/** A buyer's subscription on a connected account: its id names the license it pays for. */
export const LicenseSubscriptionObject = z.object({ id: SubscriptionId });

export type ProcessorEvent = z.infer<typeof ProcessorEvent>;
export type InvoiceObject = z.infer<typeof InvoiceObject>;
export type SubscriptionObject = z.infer<typeof SubscriptionObject>;

export const PaymentLink = z.object({
  id: z.string().describe("The processor's payment link id (plink_...)"),
  url: z.string().describe('The reusable buying URL to publish'),
  created_at: z.iso.datetime(),
  delivering: z.boolean().describe('False when the processor account was reconnected since: regenerate the link to sell again'),
});

export const PurchaseLink = z.object({
  checkout_url: z.string().describe('Single use: it stops working once paid or expired'),
  expires_at: z.iso.datetime(),
});
