import fs from 'node:fs';
import { Command, Option } from 'commander';
import type { ApiClient } from './api-client.js';
import { LICENSE_STATUS_FILTERS, LICENSE_TYPES } from './api-values.js';
import { CliError, EXIT } from './errors.js';
import { addMeterCommands, meterOption } from './meters.js';
import { jsonObject, queryString, wholeNumber, withJson, withPage } from './options.js';
import { countLine, renderJson, renderRecord, renderTable } from './output.js';
import { assertWritablePath, writePrivateFile } from './private-file.js';
import { seatFields, seatsOf, withSeatOptions } from './seat-options.js';

interface License extends Record<string, unknown> {
  license_id: string;
  license_key: string;
  status: string;
  license_type: string;
  device_limit: number;
  seat_model: string;
  max_concurrent: number | null;
  email: string | null;
  expires_at: string | null;
}

interface Device extends Record<string, unknown> {
  fingerprint_hash: string;
}

interface Deactivation extends Record<string, unknown> {
  fingerprint_hash: string;
  source: string;
  deactivated_at: string;
}

const licenseSummary = (l: License) => {
  const { devices: _devices, ...fields } = l;
  return renderRecord(fields);
};

/** `latchkey licenses ...`: create, list, inspect, revoke and reset licenses, over the public API. */
export function licensesCommand(api: ApiClient, print: (out: string) => void): Command {
  const licenses = new Command('licenses').description('Create, inspect and revoke license keys');

  withSeatOptions(withJson(licenses.command('create').description('Create a license key')))
    .requiredOption('--app <app_id>', 'the app the license is for')
    .option('--email <email>', "the customer's email")
    .option('--device-limit <n>', "devices it may run on (default: the app's)", wholeNumber)
    .addOption(new Option('--type <type>', 'license type').choices(LICENSE_TYPES))
    .option('--expiry-days <n>', 'expire this many days from now', wholeNumber)
    .option('--features <json>', 'features object the runtime reads, e.g. \'{"tier":"pro"}\'', jsonObject)
    .option('--meter <feature=uses/period>', 'a metered feature, e.g. export=100/month (period: day, month, year, lifetime); repeatable', meterOption)
    .action(async (opts) => {
      const { body } = await api.request('POST', '/v1/licenses', {
        app_id: opts.app,
        email: opts.email,
        device_limit: opts.deviceLimit,
        license_type: opts.type,
        expiry_days: opts.expiryDays,
        features: opts.features,
        ...seatFields(opts),
        meters: opts.meter,
      });
      print(opts.json ? renderJson(body) : licenseSummary(body as License));
    });

  withPage(withJson(licenses.command('list').description('List licenses, oldest first')))
    .option('--app <app_id>', 'only licenses of this app')
    .addOption(new Option('--status <status>', 'only licenses with this status').choices(LICENSE_STATUS_FILTERS))
    .action(async (opts) => {
      const query = queryString({ app_id: opts.app, status: opts.status, limit: opts.limit, offset: opts.offset });
      const { body, headers } = await api.request('GET', `/v1/licenses${query}`);
      if (opts.json) return print(renderJson(body));
      const rows = body as License[];
      print(
        renderTable(
          ['LICENSE ID', 'LICENSE KEY', 'STATUS', 'TYPE', 'SEATS', 'EMAIL', 'EXPIRES AT'],
          rows.map((l) => [l.license_id, l.license_key, l.status, l.license_type, seatsOf(l), l.email, l.expires_at]),
        ) + countLine(rows.length, headers, 'license'),
      );
    });

  withJson(licenses.command('get').description('Show a license and its devices'))
    .requiredOption('--license <license_id>', 'the license')
    .action(async (opts) => {
      const { body } = await api.request('GET', `/v1/licenses/${encodeURIComponent(opts.license)}`);
      if (opts.json) return print(renderJson(body));
      const devices = (body as { devices: Device[] }).devices;
      const table = renderTable(
        ['FINGERPRINT HASH', 'PLATFORM', 'APP VERSION', 'ENGINE', 'FIRST SEEN', 'LAST SEEN'],
        devices.map((d) => [d.fingerprint_hash, d.platform, d.app_version, d.engine_version, d.first_seen_at, d.last_seen_at]),
      );
      print(`${licenseSummary(body as License)}\nDevices (${devices.length})\n${devices.length ? table : ''}`);
    });

  withJson(licenses.command('revoke').description('Revoke a license; it stops working at the next start or refresh'))
    .requiredOption('--license <license_id>', 'the license')
    .action(async (opts) => {
      const { body } = await api.request('POST', `/v1/licenses/${encodeURIComponent(opts.license)}/revoke`);
      print(opts.json ? renderJson(body) : licenseSummary(body as License));
    });

  withJson(
    licenses.command('set-download-limit').description("Set a license's download limit (delivery page and installer together); it replaces the default allowance of 10 per build"),
  )
    .requiredOption('--license <license_id>', 'the license')
    .option('--limit <n>', 'downloads in all, from 1', wholeNumber)
    .option('--default', 'go back to the default allowance')
    .action(async (opts) => {
      if ((opts.limit === undefined) === (opts.default === undefined)) throw new CliError('give either --limit <n> or --default', EXIT.USAGE);
      const { body } = await api.request('PUT', `/v1/licenses/${encodeURIComponent(opts.license)}/download-limit`, {
        download_limit: opts.default ? null : opts.limit,
      });
      print(opts.json ? renderJson(body) : licenseSummary(body as License));
    });

  withJson(licenses.command('set-seats').description("Set a floating license's seats (copies running at once) and lease TTL"))
    .requiredOption('--license <license_id>', 'the license (floating)')
    .requiredOption('--max-concurrent <n>', 'copies that may run at once', wholeNumber)
    .option('--lease-ttl-minutes <n>', 'how long a seat stays taken without a heartbeat, and the offline grace (default: unchanged)', wholeNumber)
    .action(async (opts) => {
      const { body } = await api.request('PUT', `/v1/licenses/${encodeURIComponent(opts.license)}/seats`, {
        max_concurrent: opts.maxConcurrent,
        lease_ttl_minutes: opts.leaseTtlMinutes,
      });
      print(opts.json ? renderJson(body) : licenseSummary(body as License));
    });

  withJson(licenses.command('reset-devices').description('Deactivate every device of a license'))
    .requiredOption('--license <license_id>', 'the license')
    .action(async (opts) => {
      const { body } = await api.request('POST', `/v1/licenses/${encodeURIComponent(opts.license)}/reset-devices`);
      const { license_id, devices_removed } = body as { license_id: string; devices_removed: number };
      print(opts.json ? renderJson(body) : `Removed ${devices_removed} device(s) from ${license_id}\n`);
    });

  withPage(withJson(licenses.command('deactivations').description("Show a license's deactivation history, newest first (by the app and by your resets)")))
    .requiredOption('--license <license_id>', 'the license')
    .action(async (opts) => {
      const query = queryString({ limit: opts.limit, offset: opts.offset });
      const { body, headers } = await api.request('GET', `/v1/licenses/${encodeURIComponent(opts.license)}/deactivations${query}`);
      if (opts.json) return print(renderJson(body));
      const rows = body as Deactivation[];
      print(
        renderTable(
          ['DEACTIVATED AT', 'SOURCE', 'FINGERPRINT HASH'],
          rows.map((d) => [d.deactivated_at, d.source, d.fingerprint_hash]),
        ) + countLine(rows.length, headers, 'deactivation'),
      );
    });

  withJson(
    licenses
      .command('activate-offline')
      .description("Offline activation: answer a customer's activation request file (written by the app on a machine without network) with a license file"),
  )
    .requiredOption('--request <file>', 'the activation request file the app exported')
    .requiredOption('--out <file>', 'where to write the license file, for the customer to import in the app')
    .action(async (opts) => {
      const text = fs.statSync(opts.request, { throwIfNoEntry: false })?.isFile() ? fs.readFileSync(opts.request, 'utf8') : undefined;
      if (text === undefined) throw new CliError(`${opts.request} is not a readable file`, EXIT.USAGE);
      // Checked before the request: once the server answers, the activation counts.
      assertWritablePath(opts.out, '--out');
      let request: unknown;
      try {
        request = JSON.parse(text);
      } catch {
        throw new CliError(`${opts.request} is not an activation request file (not JSON)`, EXIT.USAGE);
      }
      // The same endpoint as the hosted page: every activation rule (device limit, trials, expiry) applies.
      const { body } = await api.request('POST', '/v1/licenses/offline-activation', request);
      const { license_file, file_expires_at } = body as { license_file: string; file_expires_at: string };
      try {
        writePrivateFile(opts.out, `${license_file}\n`);
      } catch (err) {
        // The activation is recorded now: the license file must not be lost with the write.
        print(`${license_file}\n`);
        throw new CliError(`${(err as Error).message}; the activation is recorded, and its license file was printed to stdout instead`);
      }
      print(opts.json ? renderJson(body) : `Wrote the license file to ${opts.out}; the app must import it before ${file_expires_at}\n`);
    });

  addMeterCommands(licenses, api, print);
  return licenses;
}
