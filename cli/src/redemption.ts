import { Command, Option } from 'commander';
import type { ApiClient } from './api-client.js';
import { LICENSE_TYPES } from './api-values.js';
import { appPath, jsonObject, queryString, wholeNumber, withJson, withPage } from './options.js';
import { meterOption, metersText, type Meters } from './meters.js';
import { countLine, renderJson, renderRecord, renderTable } from './output.js';
import { seatFields, seatsOf, withSeatOptions } from './seat-options.js';

interface Batch extends Record<string, unknown> {
  id: string;
  channel: string;
  label: string;
  quantity: number;
  license_type: string;
  seat_model: string;
  device_limit: number;
  max_concurrent: number | null;
  meters: Meters | null;
  created_at: string;
}

/** A batch's meters as `--meter` writes them; none given: the app's sold meters when redeemed. */
const batchMeters = (b: Batch) => (b.meters ? metersText(b.meters) : "app's sold meters");

/** `latchkey redemption ...`: batches of single-use codes that marketplaces sell and customers redeem for a license. */
export function redemptionCommand(api: ApiClient, print: (out: string) => void): Command {
  const redemption = new Command('redemption').description('Generate and list redemption code batches');

  withSeatOptions(withJson(redemption.command('create-batch').description('Generate a batch of codes; they are printed once and never shown again')))
    .requiredOption('--app <app_id>', 'the app the codes are for')
    .requiredOption('--channel <label>', 'the marketplace, a lowercase label (the licenses’ source)')
    .requiredOption('--quantity <n>', 'codes to generate, 1 to 10000', wholeNumber)
    .option('--label <text>', 'descriptive text for the portal')
    .option('--device-limit <n>', "node-locked: devices each license may run on (default: the app's)", wholeNumber)
    .addOption(new Option('--type <type>', 'license type (default perpetual)').choices(LICENSE_TYPES))
    .option('--expiry-days <n>', 'each license expires this many days after its redemption (default 0: never)', wholeNumber)
    .option('--features <json>', 'features object copied to every license, e.g. \'{"tier":"pro"}\'', jsonObject)
    .option('--meter <feature=uses/period>', "a metered feature of every license, e.g. export=100/month; repeatable (default: the app's sold meters when redeemed)", meterOption)
    .option('--codes-expire-at <iso>', 'codes not redeemed by then expire (ISO 8601)')
    .action(async (opts) => {
      const { body } = await api.request('POST', appPath(opts.app, 'redemption-batches'), {
        channel: opts.channel,
        quantity: opts.quantity,
        label: opts.label,
        device_limit: opts.deviceLimit,
        license_type: opts.type,
        license_expiry_days: opts.expiryDays,
        features: opts.features,
        meters: opts.meter,
        codes_expire_at: opts.codesExpireAt,
        ...seatFields(opts),
      });
      if (opts.json) return print(renderJson(body));
      const { codes, ...batch } = body as Batch & { codes: string[] };
      print(`${renderRecord({ ...batch, meters: batchMeters(batch) })}\nCodes (${codes.length}; shown this once)\n${codes.join('\n')}\n`);
    });

  withPage(withJson(redemption.command('batches').description("List an app's batches, oldest first, with their codes counted by status")))
    .requiredOption('--app <app_id>', 'the app')
    .action(async (opts) => {
      const { body, headers } = await api.request('GET', `${appPath(opts.app, 'redemption-batches')}${queryString({ limit: opts.limit, offset: opts.offset })}`);
      if (opts.json) return print(renderJson(body));
      const rows = body as (Batch & { counts: Record<string, number> })[];
      print(
        renderTable(
          ['BATCH ID', 'CHANNEL', 'LABEL', 'TYPE', 'SEATS', 'METERS', 'CODES', 'AVAILABLE', 'REDEEMED', 'CREATED AT'],
          rows.map((b) => [b.id, b.channel, b.label, b.license_type, seatsOf(b), batchMeters(b), b.quantity, b.counts.available, b.counts.redeemed, b.created_at]),
        ) + countLine(rows.length, headers, 'batch'),
      );
    });

  return redemption;
}
