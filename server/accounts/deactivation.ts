import type { Db } from '../db/knex.js';
import { RequestError } from '../errors.js';

/**
 * Account deactivation (docs/contract.md, Billing events): `customer.subscription.deleted` of the
 * developer's own subscription deactivates the account, a new subscription reactivates it
 * (payments/subscriptions.ts sets and clears `developers.deactivated_at`). A deactivated developer
 * still signs in and reads everything, and their customers' licenses keep activating and
 * refreshing (those calls carry no developer credential); what stops is every change the developer
 * makes, by session or API key, except securing the account or reducing what it exposes
 * (`RouteDef.securesAccount`). `mountRoutes` asks here before any developer operation that is not a
 * read: the rule's one check.
 */
export function createAccountDeactivation(db: Db) {
  return {
    /** Throws 403 ACCOUNT_DEACTIVATED when the developer's account is deactivated. */
    async refuseChangesIfDeactivated(developerId: string): Promise<void> {
      const row = await db('developers').where({ id: developerId }).first<{ deactivated_at: Date | null } | undefined>('deactivated_at');
      if (row?.deactivated_at) {
        throw new RequestError(
          'ACCOUNT_DEACTIVATED',
          `This account was deactivated on ${row.deactivated_at.toISOString()} because its Latchkey subscription was cancelled: ` +
            "you can sign in and read everything, and your customers' licenses keep working, but changes need a new subscription",
        );
      }
    },
  };
}

export type AccountDeactivation = ReturnType<typeof createAccountDeactivation>;
