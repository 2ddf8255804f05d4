import type { Knex } from 'knex';
import { newId, randomSecret } from '../crypto/secrets.js';
import { isUniqueViolation } from '../db/knex.js';
import { RequestError, assertThat } from '../errors.js';
import type { Page } from '../http/pagination.js';
import type { PushGuards } from '../updates/rules.js';
import { soldSeatColumns, type CreateAppInput, type UpdateAppInput } from './schemas.js';
import type { AppRow, AppsStore } from './store.js';

function priceIdConflict(err: unknown): never {
  if (isUniqueViolation(err, 'apps_price_id_key')) {
    throw new RequestError('PRICE_ID_IN_USE', 'This Price ID is already used by another app; one Price ID backs one app');
  }
  throw err;
}

export function createAppsService(deps: {
  store: AppsStore;
  /** Removes what an app keeps outside the database: its builds' files. */
  removeStoredFiles: (appId: string) => Promise<void>;
  /** Stops the app's payment link selling at the processor, in the transaction that deletes the app (and the link's row). */
  retirePaymentLink: (trx: Knex.Transaction, developerId: string, appId: string) => Promise<void>;
  pushGuards: Pick<PushGuards, 'beforeReleasedOnly'>;
  /** docs/contract.md's price rules, against the developer's connected processor account; throws the refusal. */
  checkPriceId: (developerId: string, priceId: string) => Promise<void>;
}) {
  const { store } = deps;

  /** Only a Price ID being set is checked: clearing one, or leaving it out, needs no processor. */
  const checkPrice = async (developerId: string, priceId: string | null | undefined) => {
    if (priceId) await deps.checkPriceId(developerId, priceId);
  };

  async function get(developerId: string, appId: string): Promise<AppRow> {
    const app = await store.find(developerId, appId);
    assertThat(app, 'APP_NOT_FOUND', 'No such app');
    return app;
  }

  return {
    get,
    list: (developerId: string, page: Page) => store.list(developerId, page),

    create: async (developerId: string, input: CreateAppInput) => {
      await checkPrice(developerId, input.price_id);
      return store
        .insert({
          ...input,
          ...soldSeatColumns(input),
          price_id: input.price_id ?? null,
          product_key: input.product_key ?? null,
          download_limit: input.download_limit ?? null,
          id: newId('app'),
          developer_id: developerId,
          fingerprint_salt: randomSecret(32),
        })
        .catch(priceIdConflict);
    },

    /** Switching to released_only answers to the push rules in the same transaction (docs/contract.md push rule 4). */
    async update(developerId: string, appId: string, input: UpdateAppInput): Promise<AppRow> {
      const { release_current, ...settings } = input;
      const patch = { ...settings, ...soldSeatColumns(settings) };
      // Another developer's app answers 404 before their price is judged.
      if (patch.price_id) await get(developerId, appId);
      await checkPrice(developerId, patch.price_id);
      const app = await store
        .transaction(async (trx) => {
          if (patch.delivery_mode === 'released_only') {
            await deps.pushGuards.beforeReleasedOnly(trx, developerId, appId, release_current ?? false);
          }
          return store.update(trx, developerId, appId, patch);
        })
        .catch(priceIdConflict);
      assertThat(app, 'APP_NOT_FOUND', 'No such app');
      return app;
    },

    async remove(developerId: string, appId: string): Promise<void> {
      const removed = await store.transaction(async (trx) => {
        await deps.retirePaymentLink(trx, developerId, appId);
        return store.remove(developerId, appId, trx);
      });
      assertThat(removed, 'APP_NOT_FOUND', 'No such app');
      await deps.removeStoredFiles(appId);
    },
  };
}

export type AppsService = ReturnType<typeof createAppsService>;
