import type { Knex } from 'knex';
// The fee as billing's rule says; FINISH_EVENT writes it and its report job with the event's record in one statement.
import { feeDue } from '../billing/fee-rule.js';
import type { Clock } from '../clock.js';
import { newId } from '../crypto/secrets.js';
import type { DeliverableBuild } from '../delivery/deliverable-builds.js';
import { isUniqueViolation } from '../db/knex.js';
import { assertThat } from '../errors.js';
import type { WebhookActor } from '../http/auth.js';
import { newLicenseKey } from '../licenses/license-key.js';
import { unknownWebhookUrl, type WebhookCredentials } from './credentials.js';
import type { StoreOffer } from './offer.js';
import { COMMERCE_PLATFORM_SOURCE, decide, isGrantType, isStale, type Change, type TrialKind } from './rules.js';
import { ATTRIBUTION_FIELDS, type EntitlementEventInput, type EventAction, type EventNote, type EventOutcomeView } from './schemas.js';
import type { EntitlementsStore, EventApp, EventRecord, EventWrites, StoreLicense, StoreLicenseRow } from './store.js';

/** Two different shops' events naming one event id race to its primary key; the loser runs again and finds it. */
const EVENT_ID_RACE_ATTEMPTS = 3;

interface Applied {
  outcome: EventOutcomeView;
  queued: boolean;
}

/** The rows an event works on, locked: the shop's, and its license's. */
interface EventScope {
  trx: Knex.Transaction;
  app: EventApp;
  row: StoreLicenseRow;
  event: EntitlementEventInput;
  now: Date;
  /** An email was queued: wake the runner after the commit (a fee's report waits: billing/store.ts FEE_REPORT_JOB). */
  queued: boolean;
  /** The license to insert and the fee to charge with the event's record. */
  writes: EventWrites;
  /** The app's newest deliverable builds (read by the event's first statement): what a grant offers. */
  builds: DeliverableBuild[];
}

/** Attribution fields the event carried (docs/contract.md: never part of the decision), over those stored. */
function mergedAttribution(stored: Record<string, string>, event: EntitlementEventInput): Record<string, string> {
  const merged = { ...stored };
  for (const field of ATTRIBUTION_FIELDS) {
    const value = event[field];
    if (value !== undefined) merged[field] = value;
  }
  return merged;
}

/** docs/contract.md's entitlement webhook: one event, applied once, in the shop's order, committed before the answer. */
export function createEntitlementEvents(deps: {
  store: EntitlementsStore;
  offer: StoreOffer;
  credentials: WebhookCredentials;
  clock: Clock;
  /** Starts queued emails once the event is committed. */
  wakeJobs: () => void;
}) {
  const { store, offer } = deps;

  const record = (
    scope: { app: EventApp; event: EntitlementEventInput; now: Date },
    fields: Pick<EventRecord, 'action' | 'note' | 'store_license_id' | 'license_id'>,
  ): EventRecord => ({
    app_id: scope.app.id,
    event_id: scope.event.event_id,
    kind: 'webhook',
    shop: scope.event.shop,
    app_value: scope.event.app,
    entitled: scope.event.entitled,
    occurred_at: scope.event.occurred_at,
    trial: scope.event.trial ?? false,
    test: scope.event.test ?? false,
    topic: scope.event.topic ?? null,
    platform_status: scope.event.status ?? null,
    received_at: scope.now,
    ...fields,
  });

  const answer = (eventId: string, action: EventAction, note: EventNote | null, delivery?: { key: string; url: string | null }): EventOutcomeView => ({
    ok: action !== 'unactionable',
    action,
    event_id: eventId,
    license_key: delivery?.key ?? null,
    delivery_url: delivery?.key ? delivery.url : null,
    note,
  });

  /** The first answer to an event id, again: its action and note, and the key and URL of a grant-type one. */
  async function echo(trx: Knex.Transaction, prior: EventRecord, now: Date): Promise<EventOutcomeView> {
    const original = prior.action as EventAction;
    let delivery: { key: string; url: string | null } | undefined;
    if (isGrantType(original) && prior.license_id && prior.store_license_id) {
      const license = await store.readLicense(trx, prior.license_id, now);
      const row = await store.lockStoreLicense(trx, prior.store_license_id);
      if (license && row) delivery = { key: license.license_key, url: offer.urlOf(row) };
    }
    return { ...answer(prior.event_id, 'duplicate', prior.note as EventNote | null, delivery), ok: original !== 'unactionable', original_action: original };
  }

  async function mint(scope: EventScope, trialKind: TrialKind | null): Promise<StoreLicense> {
    const { trx, app, row, event } = scope;
    const license = {
      id: newId('lic'),
      license_key: newLicenseKey(),
      // A store's license lasts as long as the store says (entitled: false ends it): no expiry of its own.
      license_type: 'subscription' as const,
      device_limit: app.default_device_limit,
      email: event.customer_email ?? row.delivery_email,
      source: COMMERCE_PLATFORM_SOURCE,
    };
    // Inserted with the event's record (FINISH_EVENT), unless a delivery email (referencing it) is queued before that.
    if (event.customer_email) await store.insertLicense(trx, { ...license, developer_id: app.developer_id, app_id: app.id });
    else scope.writes.mint = { license_key: license.license_key, device_limit: license.device_limit, email: license.email };
    row.license_id = license.id;
    row.trial_kind = trialKind;
    row.delivery_token_hash = offer.tokenHashOf(row.id);
    row.offered_build_ids = offer.offeredWith(app, row, scope.builds);
    return { ...license, effective_status: 'ACTIVE', expires_at: null, download_limit: null };
  }

  /** Applies the decision's change to the license; the shop row (`scope.row`) is updated by the caller. */
  async function apply(scope: EventScope, license: StoreLicense | undefined, change: Change): Promise<StoreLicense | undefined> {
    const { trx, app, row, now } = scope;
    if (change.kind === 'mint') license = await mint(scope, change.trialKind);
    if (!license) return undefined;
    if (change.kind === 'revoke') {
      await store.updateLicense(trx, license.id, { status: 'REVOKED', revoked_at: now, updated_at: now });
      await store.removeDevices(trx, license.id, 'revoked', now);
      row.trial_kind = null;
      return { ...license, effective_status: 'REVOKED' };
    }
    if (change.kind === 'reactivate' || change.kind === 'convert') {
      // A store decides how long the license lasts: a trial's own expiry is lifted.
      await store.updateLicense(trx, license.id, { status: 'ACTIVE', revoked_at: null, license_type: 'subscription', expires_at: null, updated_at: now });
      if (license.license_type === 'trial' && change.trialKind === null) await store.freeTrialMachines(trx, license.id);
      row.trial_kind = change.trialKind;
      row.delivery_token_hash ??= offer.tokenHashOf(row.id);
      if (change.kind === 'reactivate') row.offered_build_ids = offer.offeredWith(app, row, scope.builds);
      license = { ...license, effective_status: 'ACTIVE', license_type: 'subscription', expires_at: null };
    }
    // Once the ledger has the license's fee, a later paid event need not ask it again.
    // A store license is sold as a subscription: only a test one is exempt (the ledger's rule), and stays unsettled.
    if (change.charge && !row.fee_settled) {
      scope.writes.fee = feeDue({ licenseId: license.id, licenseType: 'subscription', test: scope.event.test });
      row.fee_settled = scope.writes.fee !== null;
    }
    return license;
  }

  async function processIn(trx: Knex.Transaction, actor: WebhookActor, event: EntitlementEventInput): Promise<Applied> {
    const now = deps.clock.now();
    const opened = await store.openEvent(trx, {
      id: newId('stl'),
      appId: actor.appId,
      shop: event.shop,
      now,
      appValue: event.app,
      eventId: event.event_id,
    });
    // The authenticator may have answered from memory: the webhook row read now has the last word.
    deps.credentials.confirm(actor, opened?.app, now);
    if (!opened) throw unknownWebhookUrl();
    const { app } = opened;
    if (!opened.shop) {
      // Not the product key (or none is set): no shop row was taken.
      const fields = { action: 'unactionable', note: 'app_mismatch', store_license_id: null, license_id: null } as const;
      if (await store.insertEvent(trx, record({ app, event, now }, fields))) return { outcome: answer(event.event_id, 'unactionable', 'app_mismatch'), queued: false };
      return { outcome: await echo(trx, (await store.findEvent(trx, app.id, event.event_id))!, now), queued: false };
    }
    const { row, inserted } = opened.shop;
    let prior: EventRecord | undefined;
    let found: StoreLicense | undefined;
    if (inserted) {
      // A shop seen for the first time: no license, and the first statement's reads are current (OPEN_EVENT).
      prior = opened.prior;
    } else {
      const read = await store.priorAndLicense(trx, { appId: app.id, eventId: event.event_id, licenseId: row.license_id, now });
      prior = read.prior;
      found = read.license;
    }
    if (prior) return { outcome: await echo(trx, prior, now), queued: false };
    if (isStale(event, row)) {
      await store.recordEvent(trx, record({ app, event, now }, { action: 'stale_skipped', note: null, store_license_id: row.id, license_id: row.license_id }));
      return { outcome: answer(event.event_id, 'stale_skipped', null), queued: false };
    }

    // docs/contract.md: the entitlement webhook needs an active Pro subscription. A lapsed plan still lets a
    // store's entitlement end (a revoke protects the developer), but grants nothing: the broker gets a
    // permanent 403 and nothing is recorded, so the decision can be sent again once the plan is renewed.
    assertThat(!event.entitled || opened.plan === 'pro', 'PLAN_REQUIRED', "The entitlement webhook grants licenses only while the developer's Pro subscription is active");
    const decision = decide({ entitled: event.entitled, trial: event.trial ?? false, test: event.test ?? false }, found ? { ...found, trial_kind: row.trial_kind } : null);
    const scope: EventScope = { trx, app, row, event, now, queued: false, writes: { mint: null, fee: null, developerId: app.developer_id }, builds: opened.builds };
    const license = await apply(scope, found, decision.change);

    const grantType = isGrantType(decision.action) && license !== undefined;
    if (event.customer_email && license) {
      row.delivery_email = event.customer_email;
      if (license.email !== event.customer_email) await store.updateLicense(trx, license.id, { email: event.customer_email, updated_at: now });
      if (license.effective_status === 'ACTIVE' && (await offer.email(trx, app, license, row.id, event.customer_email))) scope.queued = true;
    }
    row.delivery_email = event.customer_email ?? row.delivery_email;
    row.subscription_name = event.subscription_name ?? row.subscription_name;
    row.attribution = mergedAttribution(row.attribution, event);
    // A plain insert: another shop's event with this id, committed meanwhile, fails this one whole (retried: a duplicate).
    const recorded = record({ app, event, now }, { action: decision.action, note: decision.note, store_license_id: row.id, license_id: license?.id ?? null });
    await store.finishEvent(trx, row, recorded, now, scope.writes);
    const delivery = grantType ? { key: license.license_key, url: offer.urlOf(row) } : undefined;
    return { outcome: answer(event.event_id, decision.action, decision.note, delivery), queued: scope.queued };
  }

  return {
    /** Applies the event and answers once it is committed; a 5xx (nothing committed) is the broker's cue to retry. */
    async receive(actor: WebhookActor, event: EntitlementEventInput): Promise<EventOutcomeView> {
      for (let attempt = 1; ; attempt++) {
        try {
          const { outcome, queued } = await store.transaction((trx) => processIn(trx, actor, event));
          if (queued) deps.wakeJobs();
          return outcome;
        } catch (err) {
          if (attempt >= EVENT_ID_RACE_ATTEMPTS || !isUniqueViolation(err, 'entitlement_events_pkey')) throw err;
        }
      }
    },
  };
}

export type EntitlementEvents = ReturnType<typeof createEntitlementEvents>;
