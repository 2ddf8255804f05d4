import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.js';
import type { Companions } from './companions.js';
import type { StoreDeliveryPages } from './delivery-page.js';
import type { InstallerDownloads } from './installer-download.js';
import * as s from './schemas.js';
import type { EntitlementEvents } from './service.js';
import type { WebhookSettings } from './settings.js';

const tag = 'Entitlement webhook';
const settingsRoute = { tag, auth: 'developer', rateLimit: 'apps', params: s.AppIdParams } as const;
const webhookRoute = { tag, auth: 'entitlement_webhook', rateLimit: 'entitlements', params: s.WebhookParams } as const;

const WEBHOOK_AUTH =
  'Authenticated by the URL token (an unknown or disabled one answers 404) and `X-MerchantOps-Secret` (missing or wrong: 401; a rotated secret works for 24 hours). ' +
  '400, 401 and 404 are permanent: do not retry. A 5xx or a timeout is retryable (after about 2 seconds): nothing was committed.';

/** The developer's switch for the webhook of an app. */
function settingsRoutes(settings: WebhookSettings): RouteDef[] {
  return [
    defineRoute({
      ...settingsRoute,
      method: 'post',
      path: '/v1/apps/{app_id}/entitlement-webhook',
      operationId: 'enableEntitlementWebhook',
      scope: 'admin',
      status: 201,
      summary: 'Enable the entitlement webhook of an app (Pro): its URL and secret, shown once',
      description:
        'Answers `webhook_url` (unique per app, carrying an unguessable token) and `secret` (send it as `X-MerchantOps-Secret`) this once: only their SHA-256 is stored. ' +
        "Events must carry the app's product key (set with PUT /v1/apps/{app_id}) as `app`; until one is set every event is `unactionable`. " +
        'The free plan answers 403 PLAN_REQUIRED; an app already enabled 409 ENTITLEMENT_WEBHOOK_ENABLED (rotate the secret, or disable and enable again for a new URL). ' +
        'If the plan lapses later, events that grant (`entitled: true`) answer 403 PLAN_REQUIRED and change nothing, while revokes still apply.',
      response: s.EnabledWebhook,
      errors: [403, 404, 409],
      handler: ({ actor, params }) => settings.enable(actor.developerId, params.app_id),
    }),
    defineRoute({
      ...settingsRoute,
      method: 'get',
      path: '/v1/apps/{app_id}/entitlement-webhook',
      operationId: 'getEntitlementWebhook',
      scope: 'read',
      summary: 'Whether the entitlement webhook of an app is enabled (never its URL or secret)',
      response: s.WebhookStatus,
      errors: [404],
      handler: ({ actor, params }) => settings.status(actor.developerId, params.app_id),
    }),
    defineRoute({
      ...settingsRoute,
      method: 'post',
      path: '/v1/apps/{app_id}/entitlement-webhook/rotate-secret',
      operationId: 'rotateEntitlementWebhookSecret',
      scope: 'admin',
      securesAccount: true,
      summary: 'A new webhook secret, shown once; the previous one keeps working for 24 hours',
      description:
        'The URL stays the same. Only the secret just replaced overlaps: rotating twice within 24 hours ends the oldest at once. 404 ENTITLEMENT_WEBHOOK_NOT_FOUND when not enabled.',
      response: s.RotatedSecret,
      errors: [404],
      handler: ({ actor, params }) => settings.rotateSecret(actor.developerId, params.app_id),
    }),
    defineRoute({
      ...settingsRoute,
      method: 'delete',
      path: '/v1/apps/{app_id}/entitlement-webhook',
      operationId: 'disableEntitlementWebhook',
      scope: 'admin',
      securesAccount: true,
      summary: 'Disable the entitlement webhook: its URL answers 404 from now on',
      description: 'Store licenses and their delivery pages stay as they are. Enabling again gives a new URL and secret.',
      errors: [404],
      handler: ({ actor, params }) => settings.disable(actor.developerId, params.app_id),
    }),
  ];
}

/** The broker's side: events and the companion endpoints, under the webhook URL. */
function webhookRoutes(events: EntitlementEvents, companions: Companions): RouteDef[] {
  const base = '/v1/entitlement-webhooks/{webhook_token}';
  return [
    defineRoute({
      ...webhookRoute,
      method: 'post',
      path: base,
      operationId: 'receiveEntitlementEvent',
      summary: "{webhook_url}: an entitlement decision of the commerce platform, forwarded by the developer's broker",
      description:
        `${WEBHOOK_AUTH} The 200 comes after the change is committed. Events of one shop are applied one at a time, whatever the concurrency. ` +
        'Actions: `granted` (license minted: `license_key`, `delivery_url`), `noop` (nothing to change; `note` `trial_converted` when an active trial became paid, ' +
        '`subscription_trial_started` when a no-commitment trial became a subscription trial, `trial_unaffected_by_store` for `entitled: false` on a live no-commitment trial), ' +
        '`reactivated` (same key active again), `revoked` (devices deactivated; `note` `trial_ended` for a subscription trial), ' +
        '`duplicate` (an event_id seen before: its first answer, with `original_action`), `stale_skipped` (older than an event applied for the shop; a revoke wins a tie), ' +
        '`unactionable` (`app` is not the product key; recorded, `ok: false`, `note` `app_mismatch`). ' +
        'Licenses minted here have `source` `commerce_platform` and type `subscription` with no expiry of their own. The fee is charged once per license, on the first ' +
        '`entitled: true` without `trial`; `test: true` runs everything and bills nothing. `customer_email` is stored and mailed the delivery email once per address. ' +
        'While the developer has no active Pro subscription an `entitled: true` event answers 403 PLAN_REQUIRED, recorded nowhere (send it again after renewing); `entitled: false` still applies.',
      body: s.EntitlementEvent,
      response: s.EventOutcome,
      errors: [403, 404],
      handler: ({ actor, body }) => events.receive(actor, body),
    }),
    defineRoute({
      ...webhookRoute,
      method: 'get',
      path: `${base}/entitlement`,
      operationId: 'readStoreEntitlement',
      summary: 'The entitlement of one shop, read-only',
      description: `${WEBHOOK_AUTH} A shop without a license answers entitled false and status null. An \`app\` other than the product key: 409 APP_MISMATCH.`,
      query: s.EntitlementQuery,
      response: s.EntitlementView,
      errors: [404, 409],
      handler: ({ actor, query }) => companions.read(actor, query),
    }),
    defineRoute({
      ...webhookRoute,
      method: 'post',
      path: `${base}/delivery-email`,
      operationId: 'setStoreDeliveryEmail',
      summary: "Store (or clear, with null) the delivery address of a shop's license and send it the delivery email",
      description:
        `${WEBHOOK_AUTH} An address already sent the delivery email is acknowledged without a resend (\`email_sent: false\`); nothing is sent for a license that is not active. ` +
        'An `app` other than the product key is accepted and recorded (`app_mismatch: true`). A shop without a license: 404 LICENSE_NOT_FOUND.',
      body: s.DeliveryEmailBody,
      response: s.DeliveryEmailResult,
      errors: [404],
      handler: ({ actor, body }) => companions.deliveryEmail(actor, body),
    }),
    defineRoute({
      ...webhookRoute,
      method: 'post',
      path: `${base}/trial`,
      operationId: 'startStoreTrial',
      summary: 'A 14-day no-commitment trial for a shop without a license; otherwise its current state (idempotent by state)',
      description:
        `${WEBHOOK_AUTH} The trial license (type \`trial\`, no fee) has \`expires_at\` null until the app first runs on a machine; then 14 days, enforced at activation and refresh. ` +
        "Each computer runs the app's `trials_per_computer` trials at most, whatever the store. Store events never end it; a `trial: true` event makes it a subscription trial, " +
        'a paid event converts it (and frees the computer). An `app` other than the product key: 409 APP_MISMATCH.',
      body: s.TrialBody,
      response: s.TrialResult,
      errors: [404, 409],
      handler: ({ actor, body }) => companions.trial(actor, body),
    }),
    defineRoute({
      ...webhookRoute,
      method: 'post',
      path: `${base}/redact`,
      operationId: 'redactStore',
      summary: "Remove a shop's personal data; the license row stays anonymised and expired",
      description:
        `${WEBHOOK_AUTH} Removes the shop domain, email addresses (and the license's emails), subscription name, attribution, the delivery page and the event history; ` +
        'keeps the anonymised license row (EXPIRED, except a live no-commitment trial, which keeps running), device fingerprint hashes and trial history (one free trial per computer). ' +
        'A store still paying or in a live subscription trial: 409 STORE_STILL_ENTITLED (`reason` `store_paying` or `live_subscription_trial`) unless `force: true`. ' +
        'A shop with nothing stored answers `redacted: false`. Cannot be undone; later events of the shop start a new license. `app` must be the product key (409 APP_MISMATCH).',
      body: s.RedactBody,
      response: s.RedactResult,
      errors: [404, 409],
      handler: ({ actor, body }) => companions.redact(actor, body),
    }),
    defineRoute({
      ...webhookRoute,
      method: 'post',
      path: `${base}/reset-devices`,
      operationId: 'resetStoreDevices',
      summary: "Deactivate every computer of a shop's license: 3 times in any 30 days",
      description:
        `${WEBHOOK_AUTH} Counted apart from portal and CLI resets. The fourth within 30 days: 429 RATE_LIMITED with \`Retry-After\` (seconds until the oldest leaves the window). ` +
        'A computer that used a free trial never gets a second one through a reset. A shop without a license: 404 LICENSE_NOT_FOUND; `app` must be the product key (409 APP_MISMATCH).',
      body: s.ResetDevicesBody,
      response: s.ResetDevicesResult,
      errors: [404, 409],
      handler: ({ actor, body }) => companions.resetDevices(actor, body),
    }),
  ];
}

const DeliveryToken = z.string().min(20).max(128);

/** docs/contract.md, Limits: the installer's downloads share the store license's allowance with its page. */
function installerRoute(installer: InstallerDownloads): RouteDef {
  return defineRoute({
    method: 'get',
    path: '/v1/installer-downloads/{build_id}',
    operationId: 'installerDownload',
    tag: 'Runtime',
    auth: 'none',
    rateLimit: 'general',
    summary: "Download a pushed build through an update manifest's signed link, bound to the license",
    description:
      'The `url` of an update manifest: signed for the build and the license, valid 7 days; supports Range, ETag and HEAD. For a store license ' +
      '(entitlement webhook) every download counts against the allowance it shares with the permanent delivery page (10 per build offered, or ' +
      "the developer's download limit, which replaces it), counted in bytes as there; used up: 403 DOWNLOAD_LIMIT_REACHED. A forged link 403 " +
      'DOWNLOAD_LINK_INVALID, an expired one 403 DOWNLOAD_LINK_EXPIRED; a license no longer active 403 FORBIDDEN; a build gone 404.',
    params: z.object({ build_id: z.string().max(64) }),
    query: z.object({ license: z.string().max(64), expires: z.string().max(20).optional(), signature: z.string().max(128).optional() }),
    errors: [403, 404, 416],
    fileResponse: { description: 'The package customers run' },
    handler: ({ params, query, ctx }) => installer.download(ctx, { buildId: params.build_id, licenseId: query.license, expires: query.expires, signature: query.signature }),
  });
}

/** docs/contract.md's permanent delivery URL of a store license. */
function deliveryRoutes(pages: StoreDeliveryPages): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/d/{token}',
      operationId: 'storeDeliveryPage',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: '{delivery_url_base}/d/<token>: the permanent delivery page (HTML) of a store license',
      description:
        "The app's name and its seller; the current build of each of the app's platforms (its own newest READY build, else the newest build for every OS; " +
        "released ones under released_only), the visitor's platform (from the User-Agent) first, downloaded through this token, the downloads left and next steps. " +
        'Never shows the license key; no expiry while the license is active. ' +
        'An unknown or redacted token: 404 page; a revoked or expired license: 403 page. Strict Content-Security-Policy, no referrer, no-store.',
      params: z.object({ token: DeliveryToken }),
      errors: [403, 404],
      fileResponse: { description: 'The HTML page', contentType: 'text/html' },
      handler: ({ params, ctx }) => pages.page(ctx, params.token),
    }),
    defineRoute({
      method: 'get',
      path: '/d/{token}/builds/{build_id}',
      operationId: 'storeDeliveryDownload',
      tag: 'Public',
      auth: 'none',
      rateLimit: 'general',
      summary: "Download a build offered by a permanent delivery page; counted against the store's allowance",
      description:
        'The allowance is 10 downloads per build offered (current at a notification, at a download, or now), pooled across builds; a download limit set on the ' +
        'license or the app replaces it. Counted in bytes served: the whole file is one download, a range (any Range, If-Range or several ranges) its share of one, ' +
        'HEAD and 304 nothing; an answer that would go past the allowance is refused whole. ' +
        'Used up: 403 HTML page (`#limit-reached`). A build the page does not offer: 404 page.',
      params: z.object({ token: DeliveryToken, build_id: z.string().max(64) }),
      errors: [403, 404, 416],
      fileResponse: { description: 'The package customers run' },
      handler: ({ params, ctx }) => pages.download(ctx, params.token, params.build_id),
    }),
  ];
}

export function entitlementRoutes(deps: {
  settings: WebhookSettings;
  events: EntitlementEvents;
  companions: Companions;
  pages: StoreDeliveryPages;
  installer: InstallerDownloads;
}): RouteDef[] {
  return [...settingsRoutes(deps.settings), ...webhookRoutes(deps.events, deps.companions), ...deliveryRoutes(deps.pages), installerRoute(deps.installer)];
}
