import { Command, InvalidArgumentError } from 'commander';
import type { ApiClient } from './api-client.js';
import { METER_PERIODS } from './api-values.js';
import { CliError, EXIT } from './errors.js';
import { withJson } from './options.js';
import { renderJson, renderTable } from './output.js';

export type Meters = Record<string, { uses_per_period: number; period: string }>;

interface MeterUsage {
  feature: string;
  uses_per_period: number;
  period: string;
  used: number;
  remaining: number;
  period_starts_at: string;
  period_ends_at: string | null;
}

const METER_SYNTAX = /^([A-Za-z0-9][A-Za-z0-9_.:-]{0,63})=([0-9]+)\/([a-z]+)$/;

/** `--meter export=100/month`, repeatable: each adds one meter to those given before it. */
export function meterOption(value: string, previous: Meters = {}): Meters {
  const match = METER_SYNTAX.exec(value);
  const period = match?.[3] as (typeof METER_PERIODS)[number] | undefined;
  if (!match || !period || !METER_PERIODS.includes(period)) {
    throw new InvalidArgumentError(`must be <feature>=<uses>/<period>, the period one of ${METER_PERIODS.join(', ')}; e.g. export=100/month`);
  }
  return { ...previous, [match[1]!]: { uses_per_period: Number(match[2]), period } };
}

/** Meters as `--meter` writes them, e.g. `export=100/month render=5/lifetime`; `-` for none. */
export const metersText = (meters: Meters) =>
  Object.entries(meters)
    .map(([feature, m]) => `${feature}=${m.uses_per_period}/${m.period}`)
    .join(' ') || '-';

const usageTable = (meters: MeterUsage[]) =>
  renderTable(
    ['FEATURE', 'USED', 'REMAINING', 'PER PERIOD', 'PERIOD', 'PERIOD ENDS AT'],
    meters.map((m) => [m.feature, m.used, m.remaining, m.uses_per_period, m.period, m.period_ends_at ?? 'never']),
  );

/** `latchkey licenses usage` and `latchkey licenses set-meters`: a license's metered features. */
export function addMeterCommands(licenses: Command, api: ApiClient, print: (out: string) => void): void {
  withJson(licenses.command('usage').description("Show a license's metered features and their usage in the current period"))
    .requiredOption('--license <license_id>', 'the license')
    .action(async (opts) => {
      const { body } = await api.request('GET', `/v1/licenses/${encodeURIComponent(opts.license)}/usage`);
      const { meters } = body as { meters: MeterUsage[] };
      print(opts.json ? renderJson(body) : meters.length ? usageTable(meters) : 'No metered features\n');
    });

  withJson(licenses.command('set-meters').description("Replace a license's metered features (usage already counted stays)"))
    .requiredOption('--license <license_id>', 'the license')
    .option('--meter <feature=uses/period>', `a metered feature, e.g. export=100/month (period: ${METER_PERIODS.join(', ')}); repeatable`, meterOption)
    .option('--none', 'remove every meter')
    .action(async (opts) => {
      if ((opts.meter === undefined) === (opts.none === undefined)) throw new CliError('give --meter (one or more) or --none', EXIT.USAGE);
      const { body } = await api.request('PUT', `/v1/licenses/${encodeURIComponent(opts.license)}/meters`, { meters: opts.meter ?? {} });
      const { meters } = body as { meters: MeterUsage[] };
      print(opts.json ? renderJson(body) : meters.length ? usageTable(meters) : 'No metered features\n');
    });
}
