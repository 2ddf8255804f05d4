import type { Knex } from 'knex';

export const PLANS = ['free', 'pro'] as const;
export type Plan = (typeof PLANS)[number];

/**
 * The plan a developer has now. A failed Pro renewal keeps Pro for a grace period
 * (payments/subscriptions.ts) while the processor retries the charge; when the grace period ends
 * unpaid, Pro ends by itself, with no job that could run late or not at all: every plan check
 * reads this one expression. `now` is the SQL of the current time: a knex binding (`?`,
 * EFFECTIVE_PLAN_SQL) or a numbered parameter of a prepared statement (`$4`).
 */
export const effectivePlanSqlAt = (now: string) =>
  `CASE WHEN developers.plan = 'pro' AND (developers.plan_grace_until IS NULL OR developers.plan_grace_until > ${now}) THEN 'pro' ELSE 'free' END`;

/** effectivePlanSqlAt with its one binding, the current time, as knex's `?`. */
export const EFFECTIVE_PLAN_SQL = effectivePlanSqlAt('?');

/** Selects the developer's plan now as `plan` (the query must join `developers`). */
export const effectivePlan = (q: Knex, now: Date) => q.raw(`(${EFFECTIVE_PLAN_SQL}) AS plan`, [now]);

/** The developer's plan now. */
export const planNow = (q: Knex, developerId: string, now: Date): Promise<Plan> =>
  q('developers')
    .where({ id: developerId })
    .first<{ plan: Plan }>(effectivePlan(q, now))
    .then((r) => r?.plan ?? 'free');
