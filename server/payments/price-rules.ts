import type { ProcessorPrice } from './processor.js';

/** docs/contract.md Limits: a subscription price is a flat amount of at least 4 USD per period. */
export const MIN_SUBSCRIPTION_CENTS = 400;
export const PRICE_CURRENCY = 'usd';

/**
 * Whether a Route A payment link takes the platform fee itself, as a fixed application fee: a
 * one-time price in USD. The fee is a USD amount and the processor reads an application fee in the
 * price's currency; a recurring fee would recur every period. Otherwise the fee is reported as usage.
 */
export const takesFixedFee = (price: Pick<ProcessorPrice, 'type' | 'currency'>): boolean => price.type === 'one_time' && price.currency === PRICE_CURRENCY;

/**
 * Why docs/contract.md's price rules refuse a Price, or null when it may back an app. One-time prices need
 * only be active and flat; subscriptions must also be licensed (not metered), in USD, and at least
 * MIN_SUBSCRIPTION_CENTS per period.
 */
export function priceRefusal(price: ProcessorPrice): string | null {
  if (!price.active) return `Price ${price.id} is archived on the processor; activate it or use an active Price`;
  if (price.billingScheme !== 'per_unit' || price.unitAmount === null) {
    return `Price ${price.id} is tiered or has no fixed amount; only flat prices are supported`;
  }
  if (price.type === 'one_time') return null;
  if (price.type !== 'recurring' || !price.recurring) return `Price ${price.id} has an unsupported type (${price.type})`;
  if (price.recurring.usageType !== 'licensed') return `Price ${price.id} is usage-based (metered); only flat subscription prices are supported`;
  if (price.currency !== PRICE_CURRENCY) return `Price ${price.id} is in ${price.currency.toUpperCase()}; subscription prices must be in USD`;
  if (price.unitAmount < MIN_SUBSCRIPTION_CENTS) {
    return `Price ${price.id} is ${(price.unitAmount / 100).toFixed(2)} USD per ${price.recurring.interval}; subscriptions must be at least ${MIN_SUBSCRIPTION_CENTS / 100} USD per period`;
  }
  return null;
}
