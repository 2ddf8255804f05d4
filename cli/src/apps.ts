import { Command, InvalidArgumentError, Option } from 'commander';
import type { ApiClient } from './api-client.js';
import { APP_PLATFORMS, DELIVERY_MODES, PROTECTION_LEVELS, SEAT_MODELS } from './api-values.js';
import { CliError, EXIT } from './errors.js';
import { meterOption, metersText, type Meters } from './meters.js';
import { appPath, queryString, wholeNumber, withJson, withPage } from './options.js';
import { countLine, renderJson, renderRecord, renderTable } from './output.js';

interface App extends Record<string, unknown> {
  id: string;
  name: string;
  platforms: string[];
  protection_level: string;
  delivery_mode: string;
  default_device_limit: number;
  sold_meters: Meters;
  created_at: string;
}

/** An app's settings, its sold meters as `--sold-meter` writes them. */
const appRecord = (app: App) => renderRecord({ ...app, sold_meters: metersText(app.sold_meters) });

/** `--platform a,b --platform c`: every platform named, in order. */
function collectPlatforms(value: string, previous: string[] = []): string[] {
  const named = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = named.filter((p) => !(APP_PLATFORMS as readonly string[]).includes(p));
  if (unknown.length || !named.length) throw new InvalidArgumentError(`must be among ${APP_PLATFORMS.join(', ')}`);
  return [...previous, ...named];
}

/** The settings `apps create` and `apps update` both take (the server's defaults apply to those left out of a create). */
function withAppSettings(command: Command): Command {
  return command
    .addOption(new Option('--protection-level <level>', 'how builds are protected (default standard)').choices(PROTECTION_LEVELS))
    .addOption(new Option('--delivery-mode <mode>', 'which builds customers get (default all)').choices(DELIVERY_MODES))
    .option('--default-device-limit <n>', 'devices a license may run on unless it says otherwise (default 2)', wholeNumber)
    .option('--offline-grace-hours <n>', 'how long an app runs without reaching the server (default 72)', wholeNumber)
    .option('--trials-per-computer <n>', 'trials each computer may start (default 1)', wholeNumber)
    .option('--download-limit <n>', 'downloads per license on the delivery page (default: 10 per build)', wholeNumber)
    .option('--app-deactivations <n>', 'deactivations from the app each license may make in any 30 days (default 3)', wholeNumber)
    .option('--price-id <price_id>', 'the payment processor Price to sell it at (price_...)')
    .option('--product-key <key>', "the commerce platform's product key, for its entitlement webhook")
    .addOption(
      new Option('--sold-seat-model <model>', 'what sales mint (checkout, entitlement webhook, marketplace; trials stay node_locked): node_locked (default) or floating').choices(
        SEAT_MODELS,
      ),
    )
    .option('--sold-max-concurrent <n>', 'floating: copies each sold license may run at once (required with --sold-seat-model floating)', wholeNumber)
    .option('--sold-lease-ttl-minutes <n>', 'floating: the lease life of each sold license (default 15)', wholeNumber)
    .option('--sold-meter <feature=uses/period>', 'a metered feature of each license sold, trials included, e.g. export=100/month; repeatable, replaces them all', meterOption)
    .option('--no-sold-meters', 'licenses sold carry no metered features');
}

/** The API fields of withAppSettings' options; those not given are left out of the request. */
function appSettings(opts: Record<string, unknown>) {
  if (opts.soldMeter !== undefined && opts.soldMeters === false) throw new CliError('give --sold-meter or --no-sold-meters, not both', EXIT.USAGE);
  return {
    protection_level: opts.protectionLevel,
    delivery_mode: opts.deliveryMode,
    default_device_limit: opts.defaultDeviceLimit,
    offline_grace_hours: opts.offlineGraceHours,
    trials_per_computer: opts.trialsPerComputer,
    download_limit: opts.downloadLimit,
    app_deactivations_per_30_days: opts.appDeactivations,
    price_id: opts.priceId,
    product_key: opts.productKey,
    sold_seat_model: opts.soldSeatModel,
    sold_max_concurrent: opts.soldMaxConcurrent,
    sold_lease_ttl_minutes: opts.soldLeaseTtlMinutes,
    sold_meters: opts.soldMeters === false ? {} : opts.soldMeter,
  };
}

/** `latchkey apps ...`: register apps and look them up; their ids are what every other command takes. */
export function appsCommand(api: ApiClient, print: (out: string) => void): Command {
  const apps = new Command('apps').description('Register apps and show their settings');

  withAppSettings(withJson(apps.command('create').description('Register an app')))
    .requiredOption('--name <name>', "the app's name, shown to buyers")
    .requiredOption('--platform <platforms>', `platforms it targets, comma-separated or repeated (${APP_PLATFORMS.join(', ')})`, collectPlatforms)
    .action(async (opts) => {
      const { body } = await api.request('POST', '/v1/apps', { name: opts.name, platforms: opts.platform, ...appSettings(opts) });
      print(opts.json ? renderJson(body) : appRecord(body as App));
    });

  withAppSettings(withJson(apps.command('update').description("Change an app's settings; those not named stay as they are")))
    .requiredOption('--app <app_id>', 'the app')
    .option('--name <name>', "the app's name, shown to buyers")
    .option('--platform <platforms>', `platforms it targets, comma-separated or repeated (${APP_PLATFORMS.join(', ')})`, collectPlatforms)
    .action(async (opts) => {
      const { body } = await api.request('PUT', appPath(opts.app), { name: opts.name, platforms: opts.platform, ...appSettings(opts) });
      print(opts.json ? renderJson(body) : appRecord(body as App));
    });

  withPage(withJson(apps.command('list').description('List your apps, oldest first'))).action(async (opts) => {
    const { body, headers } = await api.request('GET', `/v1/apps${queryString({ limit: opts.limit, offset: opts.offset })}`);
    if (opts.json) return print(renderJson(body));
    const rows = body as App[];
    print(
      renderTable(
        ['APP ID', 'NAME', 'PLATFORMS', 'PROTECTION', 'DELIVERY', 'DEVICE LIMIT', 'CREATED AT'],
        rows.map((a) => [a.id, a.name, a.platforms.join(','), a.protection_level, a.delivery_mode, a.default_device_limit, a.created_at]),
      ) + countLine(rows.length, headers, 'app'),
    );
  });

  withJson(apps.command('get').description("Show an app's settings, with the fingerprint salt the runtime SDK needs"))
    .requiredOption('--app <app_id>', 'the app')
    .action(async (opts) => {
      const { body } = await api.request('GET', appPath(opts.app));
      print(opts.json ? renderJson(body) : appRecord(body as App));
    });

  return apps;
}
