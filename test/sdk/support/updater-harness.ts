import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { LicenseClient } from '../../../runtime-sdk/index.js';
import type { Platform } from '../../../runtime-sdk/platform.js';
import { createUpdater, type PromptChoice, type UpdateOffer, type UpdatePrompt, type UpdaterOptions } from '../../../runtime-sdk/updates/index.js';
import { FakeAuthority, type ManifestPush } from './fake-authority.js';
import { FakeClock } from './fake-clock.js';
import { fakeMachine, tempDir } from './fake-machine.js';
import { fakeProcess, type FakeProcess } from './fake-process.js';
import { writeTree } from './install-tree.js';
import { PackageServer } from './package-server.js';
import { clientOn } from './sdk-client.js';

export const UPDATE_KEY = 'UPD8-2345-6789-ABCD';

/** Answers the update question from a script; records every offer it was shown. */
export class ScriptedPrompt implements UpdatePrompt {
  readonly offers: UpdateOffer[] = [];
  constructor(readonly answers: PromptChoice[] = []) {}
  async ask(offer: UpdateOffer): Promise<PromptChoice> {
    this.offers.push(offer);
    return this.answers.shift() ?? 'later';
  }
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A push of `bytes` served by `packages`. */
export function pushOf(packages: PackageServer, bytes: Buffer, overrides: Partial<ManifestPush> = {}): ManifestPush {
  packages.bytes = bytes;
  return { build_id: 'bld_v2', version: '2.0.0', sha256: sha256(bytes), length: bytes.length, url: packages.url, release_notes: 'Faster sync.', serial: 7, ...overrides };
}

export interface WorldOptions {
  os?: 'linux' | 'darwin' | 'win32';
  arch?: string;
  /** The app's file, relative to the install folder. Default `app.mjs`. */
  app?: string;
  /** A single executable (else a JavaScript bundle run by node). */
  executable?: boolean;
  /** More files of the install, relative to the install folder. */
  files?: Record<string, string>;
  /** The running app, when not the default node-and-bundle or single executable (Electron, ...). */
  process?: (appFile: string, installDir: string) => FakeProcess;
}

/** The v1 app as a test installs it: a shell script standing for an executable, or a bundle. */
export const v1Content = (executable: boolean) => (executable ? '#!/bin/sh\necho v1 "$@"\n' : 'console.log("v1")\n');
export const v2Content = (executable: boolean) => (executable ? '#!/bin/sh\necho v2 "$@"\n' : 'console.log("v2")\n');

/**
 * One installed, activated app: its install folder with the app's file (v1), its data folder, the
 * fake authority and package server, and a fake process (and OS) to see the restart.
 */
export class UpdateWorld {
  readonly clock = new FakeClock();
  readonly authority = new FakeAuthority(this.clock);
  readonly packages = new PackageServer();
  readonly installDir = tempDir('latchkey-install-');
  readonly dataDir = tempDir('latchkey-data-');
  readonly appFile: string;
  readonly process: FakeProcess;
  readonly machine = fakeMachine('upd');
  readonly platform: Platform;
  readonly executable: boolean;
  private readonly clients: LicenseClient[] = [];

  constructor(private readonly options: WorldOptions = {}) {
    this.executable = options.executable ?? false;
    this.appFile = path.join(this.installDir, options.app ?? 'app.mjs');
    const args = ['--open', 'notes.txt'];
    const standard = () =>
      this.executable
        ? fakeProcess({ execPath: this.appFile, script: null, args, cwd: this.installDir })
        : fakeProcess({ execPath: '/usr/bin/node', execArgv: ['--no-warnings'], script: this.appFile, args, cwd: this.installDir });
    this.process = options.process?.(this.appFile, this.installDir) ?? standard();
    this.platform = { ...this.machine.platform, name: options.os ?? 'linux', arch: options.arch ?? 'x64', process: this.process };
  }

  async start(): Promise<this> {
    await Promise.all([this.authority.start(), this.packages.start()]);
    this.authority.addLicense(UPDATE_KEY);
    writeTree(this.installDir, this.options.files ?? {}, 0o644);
    writeTree(this.installDir, { [path.relative(this.installDir, this.appFile)]: v1Content(this.executable) }, 0o750);
    const license = await this.license();
    await license.activate(UPDATE_KEY);
    return this;
  }

  /** A license client as a fresh launch of the app gets it (same data folder). */
  async license(options: { buildId?: string; appVersion?: string } = {}): Promise<LicenseClient> {
    const client = await clientOn(this.machine, this.authority, this.clock, this.dataDir, {
      platform: this.platform,
      buildId: options.buildId ?? 'bld_v1',
      appVersion: options.appVersion ?? '1.0.0',
    });
    this.clients.push(client);
    return client;
  }

  /** An updater over a new launch's license client, with no real waiting between retries. */
  async launch(options: Partial<UpdaterOptions> & { buildId?: string; appVersion?: string } = {}) {
    const { buildId, appVersion, ...rest } = options;
    const license = await this.license({ ...(buildId ? { buildId } : {}), ...(appVersion ? { appVersion } : {}) });
    return createUpdater({ license, sleep: async () => undefined, downloadIdleTimeoutMs: 2_000, ...rest });
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.dispose()));
    await Promise.all([this.authority.close(), this.packages.close()]);
    for (const dir of [this.installDir, this.dataDir]) fs.rmSync(dir, { recursive: true, force: true });
  }
}
