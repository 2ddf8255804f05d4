import { z } from 'zod';

export const MAX_STATS_DAYS = 366;

export const StatsQuery = z.object({
  days: z.coerce.number().int().min(1).max(MAX_STATS_DAYS).default(30).describe(`Days back from today (UTC), today included; 1 to ${MAX_STATS_DAYS}`),
  app_id: z.string().max(64).optional().describe('Only this app (404 when it is not yours)'),
});
export type StatsQuery = z.infer<typeof StatsQuery>;

const Day = z.object({ date: z.iso.date(), count: z.number().int() });

export const Stats = z.object({
  from: z.iso.date().describe('First day counted (UTC)'),
  to: z.iso.date().describe('Last day counted: today (UTC)'),
  activations: z.array(Day).describe('Devices first activated each day, among the devices activated now (a device reset removes its devices)'),
  licenses_created: z.array(Day).describe('Licenses created each day, whatever the channel'),
  licenses_sold: z.array(Day).describe('Licenses charged the platform fee each day: sold through a paid channel'),
  fees: z
    .array(
      z.object({
        currency: z.string(),
        period_cents: z.number().int().describe('Platform fees charged in the period'),
        period_licenses: z.number().int(),
        unbilled_cents: z.number().int().describe('Fees charged at any time and not yet billed to you through the processor (pending, failed or not reported): what you owe'),
      }),
    )
    .describe('By currency; empty when no fee was ever charged'),
});
