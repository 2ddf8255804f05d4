/**
 * The license as this installation holds it: the signed token and the license key in secret memory,
 * the times grace depends on, and a sticky verdict (revoked, expired, tampered) that only the
 * authority can lift. Loads from and saves to the encrypted cache file; writes are serialised.
 */
import path from 'node:path';
import { generateDeviceKeyPair, type DeviceKeyPair } from '../engine/content-key.js';
import { computeFingerprint, type ComponentHashes, type ComponentName, type Fingerprint } from '../fingerprint/index.js';
import { deviceMatches } from '../fingerprint/match.js';
import { quickAnchor } from '../fingerprint/quick-anchor.js';
import { timesMatchToken } from '../grace/anchor.js';
import { LicenseError } from '../errors.js';
import type { ResolvedOptions } from '../options.js';
import { verifyRuntimeToken, type RuntimeTokenClaims } from '../protocol.js';
import type { LicenseState, StatusReason } from '../status.js';
import { bindAnew, resolveBinding, type BindingRecord } from './cache-binding.js';
import { deriveCacheKey, deriveMemoKey } from './cache-keys.js';
import { cacheStampOf, openBody, openMemo, readEnvelope, removeEnvelope, sealEnvelope, writeEnvelope, type CacheStamp, type EnvelopeRead } from './cache-file.js';
import { findOsKeyStore, type OsKeyStore } from './os-key-store.js';
import type { MemoryProtection, SecretBuffer, SecretMemory } from './secret-memory.js';

export interface Verdict {
  state: Exclude<LicenseState, 'valid' | 'grace'>;
  reason: StatusReason;
}

/** What grace is computed from; all local-clock milliseconds. */
export interface OnlineRecord {
  lastOnlineAt: number;
  serverSkewMs: number;
  highWaterAt: number;
}

interface CachePayload extends OnlineRecord {
  token: string;
  licenseKey: string;
  verdict: Verdict | null;
  /** This installation's X25519 key pair: protected builds' content keys are wrapped to it. */
  deviceKey?: DeviceKeyPair;
}

export interface DeviceFingerprint {
  hash: string;
  components: ComponentName[];
  /**
   * The salted hash of each component, as the hash above was made of them: a probe is matched against
   * these by the component rule (fingerprint/match.ts). Undefined for a fingerprint remembered by an
   * earlier SDK, which only kept the hash: the first probe fills them in.
   */
  componentHashes: ComponentHashes | undefined;
  /** `memo`: remembered in the cache (fast start); `probe`: read from the hardware in this run. */
  source: 'memo' | 'probe';
  /** Settled for this run: no further probe can change it. */
  verified: boolean;
}

/** Verdicts worth saving: they must survive a restart until the authority lifts them. */
const PERSISTED_VERDICTS: readonly StatusReason[] = ['revoked_by_vendor', 'device_deactivated', 'license_expired', 'trial_used', 'clock_rollback'];

/** Saving the high-water mark on every check would be a write per call; once a minute is enough. */
const HIGH_WATER_SAVE_STEP_MS = 60_000;

export class LicenseVault {
  private token: SecretBuffer | undefined;
  private licenseKey: SecretBuffer | undefined;
  private cacheKey: SecretBuffer;
  /** The installation's X25519 key pair: the cache's, else made when first needed (a start from the cache needs none). */
  private deviceKey: SecretBuffer | undefined;
  private writes: Promise<void> = Promise.resolve();
  private savedHighWaterAt = 0;
  /**
   * The cache file this vault's license was last read from or written to (cache-file.ts CacheStamp).
   * A file that is gone or another since was removed or rewritten by another instance of the app (its
   * deactivation, a device change it saw, a new activation): only a new grant writes it then, not this
   * instance's routine saves of what it still holds in memory.
   */
  private cacheStamp: CacheStamp | undefined;
  /** Disposed: nothing is stored or sealed any more (a grant that was binding anew meanwhile is dropped). */
  private closed = false;
  /** The OS store that did not give the cache's secret back at this start (cache-binding.ts): what is sealed next is bound anew. */
  private unansweredStore: OsKeyStore | undefined;
  claims: RuntimeTokenClaims | null = null;
  record: OnlineRecord | null = null;
  verdict: Verdict | null = { state: 'unlicensed', reason: 'not_activated' };

  private constructor(
    private readonly options: ResolvedOptions,
    private memory: SecretMemory,
    private memoKey: SecretBuffer | undefined,
    public fingerprint: DeviceFingerprint,
    private binding: BindingRecord | undefined,
    private bindingKey: SecretBuffer | undefined,
  ) {
    this.cacheKey = this.deriveCacheKey(fingerprint.hash);
  }

  static async open(options: ResolvedOptions, memory: SecretMemory): Promise<LicenseVault> {
    const [read, anchor] = await Promise.all([
      readEnvelope(options.cacheFile).catch((err: unknown): EnvelopeRead => {
        options.logger.warn('license cache unreadable; starting unlicensed', { error: String(err) });
        return { kind: 'missing' };
      }),
      quickAnchor(options.platform),
    ]);
    const envelope = read.kind === 'present' ? read.envelope : undefined;
    const osKeyStore = options.osKeyStore ? await findOsKeyStore(options.platform.name, process.env, options.appId, path.dirname(options.cacheFile)) : undefined;
    // Before any grant, an exported offline request's file holds the installation's binding (keepRequestDeviceKey).
    const bound =
      envelope ??
      (await readEnvelope(requestKeyFileOf(options))
        .catch((): EnvelopeRead => ({ kind: 'missing' }))
        .then((r) => (r.kind === 'present' ? r.envelope : undefined)));
    const binding = await resolveBinding(bound ? bound.binding : null, osKeyStore);
    const bindingKey = binding.material ? keep(memory, binding.material) : undefined;
    const memoKey = memoKeyFor(anchor, options, memory, bindingKey);
    const remembered = envelope && memoKey ? parseMemo(openMemo(envelope, memoKey, aadFor(options))) : undefined;
    let fingerprint: DeviceFingerprint;
    if (envelope && remembered) {
      fingerprint = { ...remembered, components: envelope.components, source: 'memo', verified: false };
    } else {
      const probed = await probeFingerprint(options, envelope?.components);
      fingerprint = { hash: probed.hash, components: probed.components, componentHashes: probed.componentHashes, source: 'probe', verified: probed.complete };
    }
    const vault = new LicenseVault(options, memory, memoKey, fingerprint, binding.record, bindingKey);
    vault.unansweredStore = binding.unanswered;
    vault.load(read);
    if (!vault.record && envelope) {
      // Read with the component set of a cache that did not open: a new activation reads them all.
      vault.fingerprint.verified = false;
    } else if (vault.record && fingerprint.verified && memoKey) {
      // A cold start that read the cache: remember the fingerprint so the next start is warm. Queued
      // now (flush and dispose wait for it) but written after the answer: the app does not wait
      // for a write that only speeds up its next start.
      void vault.save({ after: afterTheAnswer });
    }
    return vault;
  }

  get memoryProtection(): MemoryProtection {
    return this.memory.protection;
  }

  /** Moves every secret into `memory` (sodium, once loaded) and zeroes the old copies. */
  rehome(memory: SecretMemory): void {
    // All or nothing: every secret is copied first, so a store that fails midway (sodium_malloc
    // past the locked-memory limit) leaves them all where they were, and the status true.
    const copies: SecretBuffer[] = [];
    const copy = (secret: SecretBuffer | undefined) => {
      if (!secret) return undefined;
      const copied = secret.read((bytes) => memory.store(bytes));
      copies.push(copied);
      return copied;
    };
    let moved;
    try {
      moved = [copy(this.token), copy(this.licenseKey), copy(this.memoKey), copy(this.bindingKey), copy(this.cacheKey)!, copy(this.deviceKey)] as const;
    } catch (err) {
      for (const copied of copies) copied.dispose();
      throw err;
    }
    for (const old of [this.token, this.licenseKey, this.memoKey, this.bindingKey, this.cacheKey, this.deviceKey]) old?.dispose();
    [this.token, this.licenseKey, this.memoKey, this.bindingKey, this.cacheKey, this.deviceKey] = moved;
    this.memory = memory;
  }

  get fingerprintVerified(): boolean {
    return this.fingerprint.verified;
  }

  /** The component set this installation was activated with, which every later reading must use. */
  get activatedComponents(): ComponentName[] | undefined {
    return this.record ? this.fingerprint.components : undefined;
  }

  get hasLicenseKey(): boolean {
    return this.licenseKey !== undefined;
  }

  get hasToken(): boolean {
    return this.token !== undefined && this.claims !== null;
  }

  readToken<T>(use: (token: string) => T): T | undefined {
    return this.token?.read((bytes) => use(bytes.toString('utf8')));
  }

  readLicenseKey<T>(use: (key: string) => T): T | undefined {
    return this.licenseKey?.read((bytes) => use(bytes.toString('utf8')));
  }

  /** The installation's X25519 key pair, to unwrap a content key with. */
  readDeviceKey<T>(use: (pair: DeviceKeyPair) => T): T {
    this.deviceKey ??= storeKeyPair(this.memory, generateDeviceKeyPair());
    return this.deviceKey.read((bytes) => use(JSON.parse(bytes.toString('utf8')) as DeviceKeyPair));
  }

  /** The public half, sent with activation and refresh. */
  get devicePublicKey(): string {
    return this.readDeviceKey((pair) => pair.x);
  }

  /**
   * Takes a fingerprint probed in this run.
   * - Against a remembered one: the same hash settles it, and so does a complete reading that matches
   *   by the component rule (a new network card, an added dock: the installation keeps the hash it
   *   was activated with, no network needed); an incomplete reading proves nothing; a complete one
   *   that does not match means the cache came from other hardware: it is dropped (unlicensed).
   * - Against an incomplete reading from start-up: if that one opened the cache or got a grant, it is
   *   this machine's and stays; otherwise the cache is read again with the better fingerprint.
   */
  async adoptFingerprint(probed: Fingerprint): Promise<'kept' | 'changed'> {
    const previous = this.fingerprint;
    const recorded = previous.componentHashes;
    const matches = probed.complete && previous.source === 'memo' && recorded !== undefined && deviceMatches(recorded, probed.componentHashes);
    if (probed.hash === previous.hash || matches || (previous.source === 'probe' && this.record)) {
      // Hashes an earlier SDK did not remember are taken from a reading of this very hash.
      const componentHashes = recorded ?? (probed.hash === previous.hash ? probed.componentHashes : undefined);
      this.fingerprint = { ...previous, componentHashes, verified: true };
      if (!recorded && componentHashes) await this.save();
      return 'kept';
    }
    if (previous.source === 'memo' && !probed.complete) return 'kept';
    this.fingerprint = { hash: probed.hash, components: probed.components, componentHashes: probed.componentHashes, source: 'probe', verified: probed.complete };
    this.cacheKey.dispose();
    this.cacheKey = this.deriveCacheKey(probed.hash);
    this.forgetSecrets();
    if (previous.source === 'probe') {
      await this.flush();
      this.load(await readEnvelope(this.options.cacheFile).catch((): EnvelopeRead => ({ kind: 'missing' })));
    } else {
      this.verdict = { state: 'unlicensed', reason: 'device_changed' };
      await this.enqueue(async () => {
        await removeEnvelope(this.options.cacheFile);
        this.cacheStamp = undefined;
      });
    }
    return 'changed';
  }

  /**
   * The authority re-issued this installation's token for the fingerprint the hardware reads now
   * (another installation of the machine had the device's record renamed to it): that reading
   * becomes the installation's fingerprint, and the next save seals the cache under its key. What is
   * sealed beside the cache (the meter book's queued consumptions, an exported request's key pair)
   * is sealed again under it, or it would no longer open.
   */
  async moveToFingerprint(readNow: Fingerprint): Promise<void> {
    const beside = await Promise.all(SEALED_BESIDE.map(async (suffix) => ({ suffix, value: await this.openBeside(suffix) })));
    this.fingerprint = { hash: readNow.hash, components: readNow.components, componentHashes: readNow.componentHashes, source: 'probe', verified: true };
    this.cacheKey.dispose();
    this.cacheKey = this.deriveCacheKey(readNow.hash);
    for (const { suffix, value } of beside) if (value !== undefined) await this.sealBeside(suffix, value);
  }

  /** A grant the authority just signed (or a license file imported): the online moment resets grace, the high-water mark and any verdict. */
  async storeGrant(grant: { token: string; claims: RuntimeTokenClaims; licenseKey?: string; now: number; imported?: boolean }): Promise<void> {
    await this.settleBinding();
    this.token?.dispose();
    this.token = keep(this.memory, Buffer.from(grant.token, 'utf8'));
    if (grant.licenseKey !== undefined) {
      this.licenseKey?.dispose();
      this.licenseKey = keep(this.memory, Buffer.from(grant.licenseKey, 'utf8'));
    }
    this.claims = grant.claims;
    // An imported license file was signed days before it reached this machine: the last contact is
    // the file's issue, where grace starts, and no skew is measured. Unless this clock is behind the
    // authority's and the file looks issued "later" than now: then the difference is the skew, as an
    // online grant would measure it, so the saved times agree (grace/anchor.ts) and the clock is not
    // taken for one set back.
    const issuedAt = grant.claims.iat * 1000;
    this.record = grant.imported
      ? { lastOnlineAt: Math.min(issuedAt, grant.now), serverSkewMs: Math.max(0, issuedAt - grant.now), highWaterAt: grant.now }
      : { lastOnlineAt: grant.now, serverSkewMs: issuedAt - grant.now, highWaterAt: grant.now };
    this.verdict = null;
    await this.save({ grant: true });
  }

  /**
   * Offline activation: the device key pair an exported request names must survive restarts until
   * its license file is imported (days, on an air-gapped machine), yet the cache holds it only with a
   * grant. It is sealed like the cache, with the same key, in a file beside it (`.request`).
   */
  async keepRequestDeviceKey(): Promise<void> {
    await this.settleBinding();
    // Strict: an export whose key pair was not kept could never import its license file.
    await this.readDeviceKey((deviceKey) => this.sealBeside(REQUEST_KEY_SUFFIX, { deviceKey }));
  }

  /** Without a grant, takes the device key pair of the last exported request (if it opens on this device). */
  async restoreRequestDeviceKey(): Promise<void> {
    if (this.record) return;
    const { deviceKey } = ((await this.openBeside(REQUEST_KEY_SUFFIX)) ?? {}) as { deviceKey?: DeviceKeyPair };
    if (typeof deviceKey?.d !== 'string' || typeof deviceKey.x !== 'string') return;
    this.deviceKey?.dispose();
    this.deviceKey = storeKeyPair(this.memory, deviceKey);
  }

  /** Once a license file is imported, its key pair lives in the cache. */
  dropRequestDeviceKey(): Promise<void> {
    return this.enqueue(() => removeEnvelope(`${this.options.cacheFile}${REQUEST_KEY_SUFFIX}`));
  }

  /**
   * Seals `value` (JSON) into the file beside the cache named by `suffix`, like the cache itself:
   * the same key and binding, owner-only. In the strict write queue: it rejects when not written.
   */
  sealBeside(suffix: string, value: unknown): Promise<void> {
    const text = sealEnvelope({
      components: this.fingerprint.components,
      binding: this.binding,
      body: Buffer.from(JSON.stringify(value), 'utf8'),
      cacheKey: this.cacheKey,
      aad: aadFor(this.options),
    });
    return this.enqueueStrict(async () => void (await writeEnvelope(`${this.options.cacheFile}${suffix}`, text)));
  }

  /** The JSON `sealBeside` wrote, or undefined when the file is missing or does not open on this device. */
  async openBeside(suffix: string): Promise<unknown> {
    await this.flush();
    const read = await readEnvelope(`${this.options.cacheFile}${suffix}`).catch((): EnvelopeRead => ({ kind: 'missing' }));
    if (read.kind !== 'present') return undefined;
    const opened = openBody(read.envelope, this.cacheKey, aadFor(this.options));
    if (opened.kind !== 'opened') return undefined;
    try {
      return JSON.parse(opened.plaintext.toString('utf8')) as unknown;
    } catch {
      return undefined;
    } finally {
      opened.plaintext.fill(0);
    }
  }

  /**
   * A verdict worth keeping is saved, and the device key pair replaced: content keys wrapped to the
   * old one (in the token this cache still holds) can no longer be opened, even by a patched runtime.
   */
  async storeVerdict(verdict: Verdict): Promise<void> {
    this.verdict = verdict;
    if (!PERSISTED_VERDICTS.includes(verdict.reason)) return;
    this.dropDeviceKey();
    if (this.record) await this.save();
  }

  /**
   * This installation deactivated itself: the token and the license key are zeroed, the cache file
   * is removed (after any write still queued) and the device key pair replaced, so the next start
   * is unlicensed and nothing of the license is left to read.
   */
  async forget(verdict: Verdict): Promise<void> {
    this.forgetSecrets();
    this.verdict = verdict;
    this.dropDeviceKey();
    await this.removeCacheFile();
  }

  /**
   * Removes the cache file once every queued write is done. Unlike a save, whose failure only warns
   * (the license keeps working from memory), a removal that fails rejects: the caller said the
   * license must not be left on disk.
   */
  removeCacheFile(): Promise<void> {
    return this.enqueueStrict(async () => {
      await removeEnvelope(this.options.cacheFile);
      this.cacheStamp = undefined;
    });
  }

  /** Runs `write` after every queued write, like `enqueue`, but rejects when it fails. */
  private enqueueStrict(write: () => Promise<void>): Promise<void> {
    const done = this.writes.then(write);
    this.writes = done.catch(() => undefined);
    return done;
  }

  /** Raises the high-water mark to `now`; saved at most once a minute. */
  observe(now: number): void {
    if (!this.record || now <= this.record.highWaterAt) return;
    this.record.highWaterAt = now;
    if (now - this.savedHighWaterAt >= HIGH_WATER_SAVE_STEP_MS) void this.save();
  }

  /** Resolves when every queued write has reached the disk. */
  flush(): Promise<void> {
    return this.writes;
  }

  dispose(): void {
    this.closed = true;
    this.forgetSecrets();
    this.cacheKey.dispose();
    this.dropDeviceKey();
    this.memoKey?.dispose();
    this.bindingKey?.dispose();
  }

  /** Zeroes the device key pair; the next use makes a new one. */
  private dropDeviceKey(): void {
    this.deviceKey?.dispose();
    this.deviceKey = undefined;
  }

  /**
   * Binds anew (cache-binding.ts bindAnew) a vault whose OS store did not give the cache's secret back
   * at start, before anything new is sealed: the store's secret now (made if it has none), else the
   * installation's id. The keys are derived again with it.
   */
  private async settleBinding(): Promise<void> {
    const store = this.unansweredStore;
    if (!store) return;
    this.unansweredStore = undefined;
    const [fresh, anchor] = await Promise.all([bindAnew(store), quickAnchor(this.options.platform)]);
    if (this.closed) {
      fresh.material?.fill(0);
      throw new LicenseError('DISPOSED', 'the license client was disposed');
    }
    this.binding = fresh.record;
    this.bindingKey?.dispose();
    this.bindingKey = fresh.material ? keep(this.memory, fresh.material) : undefined;
    this.cacheKey.dispose();
    this.cacheKey = this.deriveCacheKey(this.fingerprint.hash);
    this.memoKey?.dispose();
    this.memoKey = memoKeyFor(anchor, this.options, this.memory, this.bindingKey);
  }

  /** The body's key for fingerprint `hash`, bound as this cache is (cache-binding.ts), kept in secret memory only. */
  private deriveCacheKey(hash: string): SecretBuffer {
    return keep(
      this.memory,
      deriveBoundKey(this.bindingKey, (b) => deriveCacheKey(hash, this.options.fingerprintSalt, this.options.appId, b)),
    );
  }

  private load(read: EnvelopeRead): void {
    this.verdict = { state: 'unlicensed', reason: 'not_activated' };
    if (read.kind === 'missing') return;
    if (read.kind === 'corrupt') {
      this.verdict = { state: 'tampered', reason: 'cache_modified' };
      return;
    }
    const opened = openBody(read.envelope, this.cacheKey, aadFor(this.options));
    this.cacheStamp = opened.kind === 'opened' ? read.stamp : undefined;
    if (opened.kind === 'foreign') {
      this.verdict = { state: 'unlicensed', reason: 'foreign_cache' };
      return;
    }
    const payload = opened.kind === 'opened' ? parsePayload(opened.plaintext) : undefined;
    if (opened.kind === 'opened') opened.plaintext.fill(0);
    if (!payload) {
      this.verdict = { state: 'tampered', reason: 'cache_modified' };
      return;
    }
    this.token = keep(this.memory, Buffer.from(payload.token, 'utf8'));
    this.licenseKey = keep(this.memory, Buffer.from(payload.licenseKey, 'utf8'));
    this.record = { lastOnlineAt: payload.lastOnlineAt, serverSkewMs: payload.serverSkewMs, highWaterAt: payload.highWaterAt };
    this.savedHighWaterAt = payload.highWaterAt;
    this.verdict = payload.verdict;
    if (payload.deviceKey) {
      this.deviceKey?.dispose();
      this.deviceKey = storeKeyPair(this.memory, payload.deviceKey);
    }
    try {
      this.claims = verifyRuntimeToken(payload.token, this.options.publicKeys, { appId: this.options.appId, device: this.fingerprint.hash });
    } catch {
      // Sealed by us yet not verifying: the pinned keys changed or the file was forged. A refresh by key lifts it.
      this.verdict = { state: 'tampered', reason: 'token_invalid' };
      return;
    }
    // Re-sealed by hand with other times (a later last contact, to stretch grace): a refresh by key lifts it.
    if (!timesMatchToken(payload, this.claims)) this.verdict = { state: 'tampered', reason: 'cache_modified' };
  }

  /**
   * Queues a write of the cache as it is when the write runs, `after` (if given) resolved first. Only a
   * `grant` writes a cache that another instance removed or rewrote meanwhile (`cacheStamp`).
   */
  private save(options: { after?: () => Promise<void>; grant?: boolean } = {}): Promise<void> {
    return this.enqueue(async () => {
      await options.after?.();
      const record = this.record;
      if (!record || !this.token || !this.licenseKey) return;
      if (!options.grant && this.cacheStamp !== undefined && (await cacheStampOf(this.options.cacheFile)) !== this.cacheStamp) {
        this.options.logger.debug?.('the license cache was removed or rewritten by another instance of the app; not overwritten', {});
        return;
      }
      const verdict = this.verdict && PERSISTED_VERDICTS.includes(this.verdict.reason) ? this.verdict : null;
      const payload = this.token.read((token) =>
        this.licenseKey!.read((licenseKey) =>
          this.readDeviceKey((deviceKey) => JSON.stringify({ token: token.toString('utf8'), licenseKey: licenseKey.toString('utf8'), ...record, verdict, deviceKey })),
        ),
      );
      const text = sealEnvelope({
        components: this.fingerprint.components,
        binding: this.binding,
        // Remembered whenever it is this machine's: verified, or itself remembered (an early refresh must not drop it).
        ...(this.memoKey && (this.fingerprintVerified || this.fingerprint.source === 'memo') ? { memo: { plaintext: memoOf(this.fingerprint), key: this.memoKey } } : {}),
        body: Buffer.from(payload, 'utf8'),
        cacheKey: this.cacheKey,
        aad: aadFor(this.options),
      });
      this.cacheStamp = await writeEnvelope(this.options.cacheFile, text);
      this.savedHighWaterAt = record.highWaterAt;
    });
  }

  private enqueue(write: () => Promise<void>): Promise<void> {
    this.writes = this.writes.then(write).catch((err: unknown) => {
      // The license keeps working from memory; the next start may need the network.
      this.options.logger.warn('license cache could not be written', { error: String(err) });
    });
    return this.writes;
  }

  private forgetSecrets(): void {
    this.token?.dispose();
    this.licenseKey?.dispose();
    this.token = undefined;
    this.licenseKey = undefined;
    this.claims = null;
    this.record = null;
  }
}

/** Resolves once the callers waiting now have had their answer: after the pending promise callbacks and I/O. */
const afterTheAnswer = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The file beside the cache that keeps an exported offline request's device key pair. */
const REQUEST_KEY_SUFFIX = '.request';
/** The meter book's file beside the cache (meters/metering.ts). */
export const METER_BOOK_SUFFIX = '.meters';
/** Every file sealed beside the cache under its key. */
const SEALED_BESIDE = [REQUEST_KEY_SUFFIX, METER_BOOK_SUFFIX];
const requestKeyFileOf = (options: ResolvedOptions) => `${options.cacheFile}${REQUEST_KEY_SUFFIX}`;

export function probeFingerprint(options: ResolvedOptions, only: readonly ComponentName[] | undefined): Promise<Fingerprint> {
  return computeFingerprint({
    salt: options.fingerprintSalt,
    platform: options.platform,
    timeoutMs: options.fingerprintTimeoutMs,
    ...(only ? { only } : {}),
    ...(options.fingerprintProbes ? { probes: options.fingerprintProbes } : {}),
    loadSystemInformation: options.loadSystemInformation,
    onDegraded: (reason) => options.logger.warn('hardware probes unavailable: the fingerprint is the OS machine id alone', { reason }),
  });
}

/** The remembered fingerprint: its hash and its component hashes (never the raw components). */
function memoOf(fingerprint: DeviceFingerprint): Buffer {
  return Buffer.from(JSON.stringify({ hash: fingerprint.hash, componentHashes: fingerprint.componentHashes }), 'utf8');
}

/** A memo as `memoOf` writes it, or the bare 32-byte hash earlier SDKs wrote. */
function parseMemo(plaintext: Buffer | undefined): Pick<DeviceFingerprint, 'hash' | 'componentHashes'> | undefined {
  if (plaintext?.length === 32) return { hash: plaintext.toString('hex'), componentHashes: undefined };
  try {
    const memo = JSON.parse(plaintext?.toString('utf8') ?? '') as Partial<DeviceFingerprint>;
    const hashesOk = memo.componentHashes === undefined || Object.values(memo.componentHashes).every((h) => typeof h === 'string' && /^[0-9a-f]{64}$/.test(h));
    return typeof memo.hash === 'string' && /^[0-9a-f]{64}$/.test(memo.hash) && hashesOk ? { hash: memo.hash, componentHashes: memo.componentHashes } : undefined;
  } catch {
    return undefined;
  }
}

/** Moves freshly derived key bytes into secret memory and zeroes them: the secret memory holds the one copy. */
function keep(memory: SecretMemory, bytes: Uint8Array): SecretBuffer {
  const kept = memory.store(bytes);
  bytes.fill(0);
  return kept;
}

/** The fast-start memo's key (cache-keys.ts): from the machine's quick anchor, bound as the cache is; none without an anchor. */
function memoKeyFor(anchor: string | undefined, options: ResolvedOptions, memory: SecretMemory, bindingKey: SecretBuffer | undefined): SecretBuffer | undefined {
  return anchor
    ? keep(
        memory,
        deriveBoundKey(bindingKey, (b) => deriveMemoKey(anchor, options.fingerprintSalt, options.appId, b)),
      )
    : undefined;
}

/** Runs `derive` with the binding's bytes lent from secret memory (or none, for a cache of an earlier SDK). */
function deriveBoundKey(bindingKey: SecretBuffer | undefined, derive: (binding: Uint8Array | undefined) => Uint8Array): Uint8Array {
  return bindingKey ? bindingKey.read((binding) => derive(binding)) : derive(undefined);
}

function storeKeyPair(memory: SecretMemory, pair: DeviceKeyPair): SecretBuffer {
  return keep(memory, Buffer.from(JSON.stringify(pair), 'utf8'));
}

/** Binds both boxes to the file format and the app, so one app's cache cannot stand in for another's. */
function aadFor(options: ResolvedOptions): string {
  return `latchkey-license-cache/v1/${options.appId}`;
}

function parsePayload(plaintext: Buffer): CachePayload | undefined {
  try {
    const p = JSON.parse(plaintext.toString('utf8')) as Partial<CachePayload>;
    const numbers = [p.lastOnlineAt, p.serverSkewMs, p.highWaterAt].every((n) => typeof n === 'number' && Number.isFinite(n));
    const verdictOk = p.verdict === null || (typeof p.verdict === 'object' && typeof p.verdict?.state === 'string');
    const deviceKeyOk = p.deviceKey === undefined || (typeof p.deviceKey?.d === 'string' && typeof p.deviceKey.x === 'string');
    return typeof p.token === 'string' && typeof p.licenseKey === 'string' && numbers && verdictOk && deviceKeyOk ? (p as CachePayload) : undefined;
  } catch {
    return undefined;
  }
}
