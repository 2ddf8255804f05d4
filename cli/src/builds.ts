import fs from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import type { ApiClient } from './api-client.js';
import { BUILD_PLATFORMS, BUILD_STATUSES } from './api-values.js';
import { downloadVerified } from './download.js';
import { CliError, EXIT } from './errors.js';
import { appPath, queryString, withJson, withPage } from './options.js';
import { countLine, renderJson, renderRecord, renderTable } from './output.js';
import { progressBar } from './progress.js';
import { RESUMABLE_THRESHOLD_BYTES, uploadResumable } from './resumable-upload.js';

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${value} is not a positive whole number`, EXIT.USAGE);
  return n;
}

interface Build extends Record<string, unknown> {
  id: string;
  status: string;
  platform: string;
  version: string | null;
  scan_status: string;
  protection_level: string | null;
  package_format: string | null;
  package_name: string | null;
  protected_size_bytes: number | null;
  sha256: string | null;
  failure_reason: string | null;
  created_at: string;
}

const POLL_MS = 1000;

const buildPath = (appId: string, ...below: string[]) => appPath(appId, 'builds', ...below);

/** `latchkey builds ...`: upload an artifact to protect, list, inspect and download an app's builds. */
export function buildsCommand(api: ApiClient, print: (out: string) => void, stderr: NodeJS.WriteStream = process.stderr): Command {
  const builds = new Command('builds').description('Upload artifacts to protect; list, inspect and download builds');

  /** Polls until the build's job is done with it, saying each status it passes through. */
  async function settled(appId: string, build: Build): Promise<Build> {
    while (build.status === 'QUEUED' || build.status === 'PROCESSING') {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const previous = build.status;
      build = (await api.request('GET', buildPath(appId, build.id))).body as Build;
      if (build.status !== previous) stderr.write(`Build ${build.id}: ${build.status}\n`);
    }
    return build;
  }

  withJson(builds.command('upload').alias('protect').description('Upload an artifact, wait until it is protected (READY) or FAILED, and print the build'))
    .requiredOption('--app <app_id>', 'the app the build belongs to')
    .requiredOption('--artifact <file>', 'the file to protect: a JavaScript entry file, a zip or tar.gz with package.json, or any other file')
    .addOption(new Option('--platform <platform>', "the platform the build is for: one of the app's, or cross_platform").choices(BUILD_PLATFORMS).makeOptionMandatory())
    .option('--python <version>', 'the Python version, stored with the build')
    .option('--version <version>', "the app version the build carries (default: package.json's)")
    .option('--entry <path>', "the file the app starts from, or one of package.json's bin commands (default: bin, then main, then exports, then index.js)")
    .option('--no-wait', 'print the build as soon as it is QUEUED')
    .option('--resumable', `send the file in chunks that survive interruptions (default for files over ${RESUMABLE_THRESHOLD_BYTES / 1024 / 1024} MB)`)
    // Tests and slow links: smaller chunks lose less to an interruption.
    .addOption(new Option('--chunk-bytes <bytes>', 'bytes per chunk of a resumable upload').argParser(positiveInteger).hideHelp())
    .action(async (opts) => {
      const stat = fs.statSync(opts.artifact, { throwIfNoEntry: false });
      if (!stat?.isFile()) throw new CliError(`${opts.artifact} is not a readable file`, EXIT.USAGE);
      const fields: Record<string, string> = { platform: opts.platform };
      if (opts.python !== undefined) fields.python_version = opts.python;
      if (opts.version !== undefined) fields.version = opts.version;
      if (opts.entry !== undefined) fields.entry = opts.entry;
      const bar = progressBar(stderr, 'Uploading');
      let body: unknown;
      if (opts.resumable || stat.size > RESUMABLE_THRESHOLD_BYTES) {
        body = await uploadResumable(api, appPath(opts.app), opts.artifact, fields, {
          chunkBytes: opts.chunkBytes,
          onProgress: bar.update,
          onRetry: (why) => stderr.write(`\nUpload interrupted (${why}); resuming\n`),
        });
      } else {
        ({ body } = await api.upload('POST', buildPath(opts.app), { fields, file: { field: 'artifact', path: opts.artifact }, onProgress: bar.update }));
      }
      bar.done();
      stderr.write(`Build ${(body as Build).id}: ${(body as Build).status}\n`);
      const build = opts.wait ? await settled(opts.app, body as Build) : (body as Build);
      print(opts.json ? renderJson(build) : renderRecord(build));
      if (build.status === 'FAILED') throw new CliError(`the build failed: ${build.failure_reason}`);
    });

  withPage(withJson(builds.command('list').description("List an app's builds, oldest first")))
    .requiredOption('--app <app_id>', 'the app')
    .addOption(new Option('--status <status>', 'only builds with this status').choices(BUILD_STATUSES))
    .action(async (opts) => {
      const query = queryString({ status: opts.status, limit: opts.limit, offset: opts.offset });
      const { body, headers } = await api.request('GET', `${buildPath(opts.app)}${query}`);
      if (opts.json) return print(renderJson(body));
      const rows = body as Build[];
      print(
        renderTable(
          ['BUILD ID', 'STATUS', 'PLATFORM', 'VERSION', 'SCAN', 'PROTECTION', 'PACKAGE', 'SIZE', 'CREATED AT'],
          rows.map((b) => [b.id, b.status, b.platform, b.version, b.scan_status, b.protection_level, b.package_format, b.protected_size_bytes, b.created_at]),
        ) + countLine(rows.length, headers, 'build'),
      );
    });

  withJson(builds.command('get').description('Show a build: status, scan, sizes and SHA-256'))
    .requiredOption('--app <app_id>', 'the app')
    .requiredOption('--build <build_id>', 'the build')
    .action(async (opts) => {
      const { body } = await api.request('GET', buildPath(opts.app, opts.build));
      print(opts.json ? renderJson(body) : renderRecord(body as Build));
    });

  // docs/contract.md Versioning 3: a Windows or macOS build is pushed once its package is signed by the developer.
  withJson(
    builds
      .command('replace-signed')
      .alias('sign')
      .description("Replace a READY Windows or macOS build's package with the one you signed (Replace with Signed Package), and print the build"),
  )
    .requiredOption('--app <app_id>', 'the app')
    .requiredOption('--build <build_id>', 'the build')
    .requiredOption('--package <file>', "the signed package: the build's download signed with signtool (Windows) or codesign (macOS)")
    .action(async (opts) => {
      if (!fs.statSync(opts.package, { throwIfNoEntry: false })?.isFile()) throw new CliError(`${opts.package} is not a readable file`, EXIT.USAGE);
      const bar = progressBar(stderr, 'Uploading');
      const { body } = await api.upload('PUT', buildPath(opts.app, opts.build, 'signed-package'), {
        fields: {},
        file: { field: 'package', path: opts.package },
        onProgress: bar.update,
      });
      bar.done();
      print(opts.json ? renderJson(body) : renderRecord(body as Build));
    });

  withJson(builds.command('download').description("Download a READY build's package (what customers run) and check its SHA-256"))
    .requiredOption('--app <app_id>', 'the app')
    .requiredOption('--build <build_id>', 'the build')
    .option('--out <path>', "the file to save it as, or a directory to save it in under the package's name (default: this directory)")
    .action(async (opts) => {
      const build = (await api.request('GET', buildPath(opts.app, opts.build))).body as Build;
      // The link answers 409 BUILD_NOT_READY for a build still in progress or failed.
      const link = (await api.request('GET', buildPath(opts.app, opts.build, 'download'))).body as { download_url: string; expires_at: string };
      const name = path.basename(build.package_name ?? `${build.id}.bin`);
      const out = path.resolve(opts.out === undefined ? name : fs.statSync(opts.out, { throwIfNoEntry: false })?.isDirectory() ? path.join(opts.out, name) : opts.out);
      const saved = await downloadVerified(link.download_url, out, build.sha256, progressBar(stderr, 'Downloading'));
      print(
        opts.json
          ? renderJson({ ...link, file: out, size_bytes: saved.size, sha256: saved.sha256 })
          : `Saved ${out} (${saved.size} bytes, SHA-256 ${saved.sha256}${build.sha256 ? ', verified' : ''})\n`,
      );
    });

  return builds;
}
