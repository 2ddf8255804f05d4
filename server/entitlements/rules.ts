import type { LicenseStatus, LicenseType } from '../licenses/rules.js';
import type { EventAction, EventNote } from './schemas.js';

/** `source` of every license this channel mints (docs/contract.md: a label per channel). */
export const COMMERCE_PLATFORM_SOURCE = 'commerce_platform';

export type TrialKind = 'subscription' | 'no_commitment';

/** What an event needs to know about the shop's last applied event. */
export interface ShopOrder {
  last_occurred_at: Date | null;
  last_entitled: boolean | null;
}

/**
 * docs/contract.md: an event older than one already applied for the shop is skipped; on an exact tie the
 * revoke wins (a grant tied with an applied revoke is skipped; a revoke tied with a grant applies).
 */
export function isStale(event: { occurred_at: Date; entitled: boolean }, shop: ShopOrder): boolean {
  if (!shop.last_occurred_at) return false;
  const diff = event.occurred_at.getTime() - shop.last_occurred_at.getTime();
  if (diff !== 0) return diff < 0;
  return event.entitled && shop.last_entitled === false;
}

/** The store license as an event finds it. */
export interface LicenseState {
  effective_status: LicenseStatus;
  license_type: LicenseType;
  trial_kind: TrialKind | null;
}

/** What to do to the license. `charge`: the fee, once per license (the ledger ignores a repeat). */
export type Change =
  | { kind: 'mint'; trialKind: TrialKind | null; charge: boolean }
  | { kind: 'reactivate'; trialKind: TrialKind | null; charge: boolean }
  | { kind: 'convert'; trialKind: TrialKind | null; charge: boolean }
  | { kind: 'revoke' }
  | { kind: 'none'; charge: boolean };

export interface Decision {
  action: Extract<EventAction, 'granted' | 'noop' | 'reactivated' | 'revoked'>;
  note: EventNote | null;
  change: Change;
}

/** How far a trial is from a paid license: a trial only ever moves towards paid while active. */
const TRIAL_RANK = { no_commitment: 2, subscription: 1, paid: 0 } as const;

/**
 * docs/contract.md's outcome table for an event that is neither a duplicate, stale nor for another app.
 * `trial: true` with `test: true` keeps no trial state (a test subscription is not billed anyway).
 */
export function decide(event: { entitled: boolean; trial: boolean; test: boolean }, license: LicenseState | null): Decision {
  const storeTrial = event.trial && !event.test;
  const trialKind: TrialKind | null = storeTrial ? 'subscription' : null;
  if (!event.entitled) {
    if (!license || license.effective_status !== 'ACTIVE') return { action: 'noop', note: null, change: { kind: 'none', charge: false } };
    if (license.trial_kind === 'no_commitment') return { action: 'noop', note: 'trial_unaffected_by_store', change: { kind: 'none', charge: false } };
    return { action: 'revoked', note: license.trial_kind === 'subscription' ? 'trial_ended' : null, change: { kind: 'revoke' } };
  }
  if (!license) return { action: 'granted', note: null, change: { kind: 'mint', trialKind, charge: !storeTrial } };
  const wasTrial = license.trial_kind !== null || license.license_type === 'trial';
  if (license.effective_status !== 'ACTIVE') {
    const note = wasTrial && !storeTrial ? 'trial_converted' : null;
    return { action: 'reactivated', note, change: { kind: 'reactivate', trialKind, charge: !storeTrial } };
  }
  const current = TRIAL_RANK[license.trial_kind ?? 'paid'];
  const wanted = TRIAL_RANK[trialKind ?? 'paid'];
  if (wanted < current) {
    const note = trialKind === 'subscription' ? 'subscription_trial_started' : 'trial_converted';
    return { action: 'noop', note, change: { kind: 'convert', trialKind, charge: !storeTrial } };
  }
  return { action: 'noop', note: null, change: { kind: 'none', charge: !storeTrial } };
}

/** Grant-type results answer the key and the delivery URL (docs/contract.md). */
export const isGrantType = (action: EventAction) => action === 'granted' || action === 'reactivated' || action === 'noop';
