import fs from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { BUILD_PLATFORMS, BUILD_STATUSES } from '../builds/schemas.js';
import { CliError, type ApiClient } from './api-client.js';
import { renderJson, renderRecord, renderTable } from './output.js';
import { progressBar } from './progress.js';

interface Build extends Record<string, unknown> {
  id: string;
  status: string;
  platform: string;
  version: string | null;
  scan_status: string;
  protection_level: string;
  package_format: string | null;
  protected_size_bytes: number | null;
  failure_reason: string | null;
  created_at: string;
}

const POLL_MS = 1000;

function wholeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number');
  return n;
}

const buildPath = (appId: string, buildId = '') => `/v1/apps/${encodeURIComponent(appId)}/builds${buildId ? `/${encodeURIComponent(buildId)}` : ''}`;

/** `latchkey builds ...`: upload and protect an artifact, list an app's builds. */
export function buildsCommand(api: ApiClient, print: (out: string) => void, stderr: NodeJS.WriteStream = process.stderr): Command {
  const builds = new Command('builds').description('Protect artifacts and list builds');
  const withJson = (cmd: Command) => cmd.option('--json', 'print the API response as JSON');

  withJson(builds.command('protect').description('Upload an artifact, wait until it is protected (READY) or FAILED, and print the build'))
    .requiredOption('--app <app_id>', 'the app the build belongs to')
    .requiredOption('--artifact <file>', 'the file to protect: a JavaScript entry file, a zip or tar.gz with package.json, or any other file')
    .addOption(new Option('--platform <platform>', 'the platform the build is for').choices(BUILD_PLATFORMS).makeOptionMandatory())
    .option('--python <version>', 'the Python version, stored with the build')
    .option('--version <version>', "the app version the build carries (default: package.json's)")
    .action(async (opts) => {
      if (!fs.statSync(opts.artifact, { throwIfNoEntry: false })?.isFile()) throw new CliError(`${opts.artifact} is not a readable file`);
      const fields: Record<string, string> = { platform: opts.platform };
      if (opts.python !== undefined) fields.python_version = opts.python;
      if (opts.version !== undefined) fields.version = opts.version;
      const bar = progressBar(stderr, 'Uploading');
      const { body } = await api.upload('POST', buildPath(opts.app), { fields, file: { field: 'artifact', path: opts.artifact }, onProgress: bar.update });
      bar.done();
      let build = body as Build;
      stderr.write(`Build ${build.id}: ${build.status}\n`);
      while (build.status === 'QUEUED' || build.status === 'PROCESSING') {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        const previous = build.status;
        build = (await api.request('GET', buildPath(opts.app, build.id))).body as Build;
        if (build.status !== previous) stderr.write(`Build ${build.id}: ${build.status}\n`);
      }
      print(opts.json ? renderJson(build) : renderRecord(build));
      if (build.status === 'FAILED') throw new CliError(`the build failed: ${build.failure_reason}`);
    });

  withJson(builds.command('list').description("List an app's builds, oldest first"))
    .requiredOption('--app <app_id>', 'the app')
    .addOption(new Option('--status <status>', 'only builds with this status').choices(BUILD_STATUSES))
    .option('--limit <n>', 'at most this many (default 20, at most 100)', wholeNumber)
    .option('--offset <n>', 'skip this many', wholeNumber)
    .action(async (opts) => {
      const query = new URLSearchParams();
      for (const [name, value] of [['status', opts.status], ['limit', opts.limit], ['offset', opts.offset]]) {
        if (value !== undefined) query.set(name, String(value));
      }
      const { body, headers } = await api.request('GET', `${buildPath(opts.app)}${query.size ? `?${query}` : ''}`);
      if (opts.json) return print(renderJson(body));
      const rows = body as Build[];
      print(
        renderTable(
          ['BUILD ID', 'STATUS', 'PLATFORM', 'VERSION', 'SCAN', 'PROTECTION', 'PACKAGE', 'SIZE', 'CREATED AT'],
          rows.map((b) => [b.id, b.status, b.platform, b.version, b.scan_status, b.protection_level, b.package_format, b.protected_size_bytes, b.created_at]),
        ) + `${rows.length} of ${headers.get('x-total-count') ?? rows.length} build(s)\n`,
      );
    });

  return builds;
}
