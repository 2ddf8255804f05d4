import type { Knex } from 'knex';
import { hotQuery } from '../db/knex.js';
import type { Meters } from './meters/schemas.js';
import type { LicenseType, SeatModel } from './rules.js';

/**
 * A license a channel sells (checkout, marketplace, redemption, the entitlement webhook): the
 * columns a sale sets; status, counters and times take the table's defaults.
 */
export interface SoldLicenseRow {
  id: string;
  developer_id: string;
  app_id: string;
  license_key: string;
  license_type: LicenseType;
  /** Node-locked: the devices; floating: the seats (max_concurrent). Replaced by the app's sold seats when they apply. */
  device_limit: number;
  /**
   * Given by a channel that says its own seat model (a redemption batch); absent, the license takes
   * the app's sold seat model (apps.sold_*), except a trial, which is node_locked.
   */
  seat_model?: SeatModel;
  lease_ttl_minutes?: number | null;
  email: string | null;
  expires_at?: Date | null;
  features?: Record<string, unknown>;
  /**
   * Given by a channel that says its own meters (a redemption batch, {} for none); absent, the
   * license takes the app's sold meters (apps.sold_meters), a trial too.
   */
  meters?: Meters;
  /** The channel that sold it. */
  source: string;
  /** Marketplace provisioning: one license per order and app. */
  marketplace_order_id?: string | null;
  /** Checkout: one license per processor session (its id masked, and its hash). */
  payment_session_id?: string | null;
  payment_session_hash?: string | null;
  processor_subscription_id?: string | null;
}

/** The sale a license is minted for once: a second mint of the same order or session does nothing. */
export type SaleKey = 'marketplace_order' | 'payment_session';

const ONCE_PER: Record<SaleKey, string> = {
  marketplace_order: 'ON CONFLICT (app_id, marketplace_order_id) WHERE marketplace_order_id IS NOT NULL DO NOTHING',
  payment_session: 'ON CONFLICT (payment_session_hash) WHERE payment_session_hash IS NOT NULL DO NOTHING',
};

const COLUMNS = [
  'id',
  'developer_id',
  'app_id',
  'license_key',
  'license_type',
  'email',
  'expires_at',
  'source',
  'marketplace_order_id',
  'payment_session_id',
  'payment_session_hash',
  'processor_subscription_id',
];

/**
 * The one text that mints a sold license, as the body of a statement or of a CTE: from `record`,
 * the SQL of a jsonb SoldLicenseRow (completed from `from`'s columns when the statement sells it
 * itself: redemption), once per `once` when the sale has a key. Answers the new row's id and key.
 * A record without a seat model takes its app's sold seats (`sold`, joined only when the app sells
 * floating licenses and the license is no trial), and a record without meters its app's sold
 * meters (`metered`, a trial's too: a metered feature without a meter cannot be used at all), so
 * every channel mints what the app sells without code of its own, in the same statement.
 */
export const mintLicenseSql = (sale: { record: string; from?: string; where?: string; once?: SaleKey }) => `
  INSERT INTO licenses (${COLUMNS.join(', ')}, features, meters, device_limit, seat_model, lease_ttl_minutes)
  SELECT ${COLUMNS.map((c) => `l.${c}`).join(', ')}, COALESCE(l.features, '{}'::jsonb), COALESCE(l.meters, metered.sold_meters),
    COALESCE(sold.sold_max_concurrent, l.device_limit), COALESCE(l.seat_model, sold.sold_seat_model, 'node_locked'), COALESCE(l.lease_ttl_minutes, sold.sold_lease_ttl_minutes)
  FROM ${sale.from ? `${sale.from}, ` : ''}jsonb_populate_record(NULL::licenses, ${sale.record}) l
  LEFT JOIN apps sold ON sold.id = l.app_id AND sold.sold_seat_model = 'floating' AND l.seat_model IS NULL AND l.license_type <> 'trial'
  LEFT JOIN apps metered ON metered.id = l.app_id AND l.meters IS NULL
  ${sale.where ? `WHERE ${sale.where}` : ''}
  ${sale.once ? ONCE_PER[sale.once] : ''}
  RETURNING id, license_key`;

/** The license row as `mintLicenseSql`'s `record` parameter takes it. */
export const soldLicenseRecord = (row: SoldLicenseRow) => JSON.stringify(row);

const MINT = mintLicenseSql({ record: '$1::jsonb' });
const MINT_ONCE_PER_ORDER = mintLicenseSql({ record: '$1::jsonb', once: 'marketplace_order' });

/**
 * Mints the sold license in `trx` (the channel's transaction): answers its id and key, or
 * undefined when the marketplace order (`once`) already minted one (a retried or concurrent twin
 * waits here for the first to commit). A license-key collision fails the statement. Checkout mints
 * once per session inside its own sale statement (payments/store.ts) with `mintLicenseSql`.
 */
export async function mintSoldLicense(trx: Knex.Transaction, row: SoldLicenseRow, once?: 'marketplace_order'): Promise<{ id: string; license_key: string } | undefined> {
  const sql = once ? MINT_ONCE_PER_ORDER : MINT;
  const rows = await hotQuery<{ id: string; license_key: string }>(trx, sql, [soldLicenseRecord(row)], once ? 'licenses.mint_once_per_marketplace_order' : 'licenses.mint');
  return rows[0];
}
