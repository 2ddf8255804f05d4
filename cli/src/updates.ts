import fs from 'node:fs';
import { Command, Option } from 'commander';
import type { ApiClient } from './api-client.js';
import { CliError, EXIT } from './errors.js';
import { appPath, withJson } from './options.js';
import { renderJson, renderRecord } from './output.js';

interface ActivePush {
  target_build_id: string;
  version: string | null;
  platform: string;
  release_notes: string;
  serial: number;
  pushed_at: string;
  devices: { installed: number; skipped: number; pending: number; unable: number };
  complete: boolean;
}

interface PushStatus {
  push: ActivePush | null;
}

/** Who a command acts on: an app's customers, or one license (a portal operation). */
interface Audience {
  app?: string;
  license?: string;
}

function pushPath({ app, license }: Audience): string {
  if ((app === undefined) === (license === undefined)) throw new CliError('name either --app or --license', EXIT.USAGE);
  return app !== undefined ? appPath(app, 'push-update') : `/v1/licenses/${encodeURIComponent(license!)}/push-update`;
}

function renderPush(status: PushStatus, who: string): string {
  const { push } = status;
  if (!push) return `No active push for ${who}\n`;
  const { devices, release_notes, ...fields } = push;
  return renderRecord({ ...fields, ...devices, complete: push.complete ? 'yes' : 'no' }) + `\nRelease notes:\n${release_notes || '-'}\n`;
}

const describeAudience = ({ app, license }: Audience) => (app !== undefined ? `app ${app}` : `license ${license}`);

const withAudience = (cmd: Command) =>
  cmd.option('--app <app_id>', "the app: every customer's installs").option('--license <license_id>', 'one license only (may be an unreleased build)');

/** `push`: under `latchkey updates`, and as `latchkey push` for short. */
export function pushCommand(api: ApiClient, print: (out: string) => void): Command {
  return withJson(withAudience(new Command('push').description('Push a build; without --build, the newest READY one (released, under released_only)')))
    .option('--build <build_id>', 'the build to push')
    .addOption(new Option('--notes <text>', 'release notes, shown verbatim in the update popup').conflicts('notesFile'))
    .option('--notes-file <file>', 'read the release notes from a file')
    .option('--release-current', 'under released_only, release the build if it is not released yet')
    .action(async (opts) => {
      const path = pushPath(opts);
      if (opts.releaseCurrent && opts.license !== undefined) throw new CliError('--release-current applies to app pushes only', EXIT.USAGE);
      const notes = opts.notesFile !== undefined ? readNotes(opts.notesFile) : opts.notes;
      const { body } = await api.request('POST', path, {
        target_build_id: opts.build,
        release_notes: notes,
        release_current: opts.releaseCurrent,
      });
      print(opts.json ? renderJson(body) : renderPush(body as PushStatus, describeAudience(opts)));
    });
}

function readNotes(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the release notes: ${(err as Error).message}`, EXIT.USAGE);
  }
}

/** `latchkey updates ...`: push a build to an app's customers (or one license), clear the push, follow its adoption. */
export function updatesCommand(api: ApiClient, print: (out: string) => void): Command {
  const updates = new Command('updates').description('Push updates to installed apps and follow their adoption').addCommand(pushCommand(api, print));

  withJson(withAudience(updates.command('clear').description('Clear the active push; installed devices keep the new version'))).action(async (opts) => {
    await api.request('DELETE', pushPath(opts));
    // The API answers 204; the JSON is what `status` answers from now on.
    const cleared = { ...(opts.app !== undefined ? { app_id: opts.app } : { license_id: opts.license }), push: null };
    print(opts.json ? renderJson(cleared) : `Cleared the push of ${describeAudience(opts)}\n`);
  });

  withJson(withAudience(updates.command('status').description('Show the active push and its devices: installed, skipped, pending, unable'))).action(async (opts) => {
    const { body } = await api.request('GET', pushPath(opts));
    print(opts.json ? renderJson(body) : renderPush(body as PushStatus, describeAudience(opts)));
  });

  return updates;
}
