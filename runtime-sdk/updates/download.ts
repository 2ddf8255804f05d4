/**
 * Fetches a package into the updater's cache and proves it is the one the manifest signed: SHA-256
 * computed while the bytes stream to disk, cut off the moment they pass the signed `length`, refused
 * when short. A mismatch deletes the partial file; nothing outside the cache is touched before the
 * bytes verify. An interrupted download resumes with a Range request after re-hashing what is on
 * disk; a server that ignores the Range starts it over. Memory stays flat: the file is streamed.
 *
 * The bytes go to a name of this download's own (`<sha256>.<pid>.<random>.partial`), and only a
 * file whose SHA-256 matched is renamed to `<sha256>.package`: no other instance writes into the
 * file, and a `.package` file is always whole. A resume first claims the partial file by renaming
 * it, which only one instance can do.
 *
 * Plain node:http rather than got: every retry here is a resume from the bytes on disk, which a
 * library's own stream retries (from zero) would defeat.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import { once } from 'node:events';
import type http from 'node:http';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ProxyEnv } from '../network/proxy-rules.js';
import { loadWire } from '../network/wire.js';
import { asUpdateError, UpdateError } from './errors.js';

export interface PackageRef {
  url: string;
  sha256: string;
  length: number;
}

export interface DownloadOptions {
  /** The updater's cache folder (`<app data>/updates`). */
  cacheDir: string;
  /** Longest wait for the connection or for the next bytes. */
  idleTimeoutMs: number;
  /** Further attempts after a failed one, each resuming where the last stopped. */
  retries: number;
  retryBaseDelayMs: number;
  userAgent: string;
  sleep?: (ms: number) => Promise<void>;
  /** Moves the verified bytes to their cache name; default a plain rename (the updater's retries on Windows: installers cacheRename). */
  rename?: (from: string, to: string) => Promise<void>;
  /** Where `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` are read; default: this process's environment. */
  env?: ProxyEnv;
}

const PARTIAL_SUFFIX = '.partial';
const VERIFIED_SUFFIX = '.package';
/** What SDKs before the verified rename left in the cache (one file, verified in place). */
const LEGACY_SUFFIX = '.download';
const MAX_REDIRECTS = 5;
const REDIRECTS = [301, 302, 303, 307, 308];
const MAX_RETRY_DELAY_MS = 30_000;
/** Large chunks: fewer writes and hash updates per byte. */
const CHUNK_BYTES = 1024 * 1024;
/** A write that fails for these reasons will fail again: the disk, not the network. */
const DISK_ERRORS = ['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'EIO', 'EFBIG'];

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A failure worth another attempt (network, timeout, 5xx); anything else is final. */
class TransientFailure extends Error {}

/** Where `ref` is kept once verified: named by its hash. */
export function verifiedPath(cacheDir: string, ref: Pick<PackageRef, 'sha256'>): string {
  return path.join(cacheDir, `${ref.sha256}${VERIFIED_SUFFIX}`);
}

/** Downloads (or resumes) `ref` into the cache; answers the path of the verified file. */
export async function downloadPackage(ref: PackageRef, options: DownloadOptions): Promise<string> {
  const verified = verifiedPath(options.cacheDir, ref);
  let partial: string;
  try {
    await fs.mkdir(options.cacheDir, { recursive: true, mode: 0o700 });
    await removeOtherPackages(options.cacheDir, ref);
    // Fetched already (an install that failed after the download, another instance): used while it hashes right.
    if (await isWhole(verified, ref)) return verified;
    partial = await claimPartial(options.cacheDir, ref);
  } catch (err) {
    throw new UpdateError('DISK_FAILED', `the download cache is not usable: ${(err as Error).message}`, { cause: err });
  }
  const sleep = options.sleep ?? delay;
  for (let attempt = 0; ; attempt++) {
    try {
      const existing = await hashExisting(partial, ref.length);
      const { size, hash } = existing.size === ref.length ? existing : await fetchInto(partial, ref, existing, options);
      // A clean end before `length` with no declared length: maybe a cut connection; a resume tells.
      if (size < ref.length) throw new TransientFailure(`the download ended after ${size} of ${ref.length} bytes`);
      const digest = hash.digest('hex');
      if (digest !== ref.sha256) return await refuse(partial, `the package hashes to ${digest}, not the signed ${ref.sha256}`);
      await (options.rename ?? fs.rename)(partial, verified);
      return verified;
    } catch (err) {
      // Not the network's doing: the bytes were refused, or the cache could not be read or written.
      if (!(err instanceof TransientFailure)) throw asUpdateError(err, 'DISK_FAILED');
      if (attempt >= options.retries) throw new UpdateError('DOWNLOAD_FAILED', `download failed after ${attempt + 1} attempts: ${err.message}`, { cause: err });
      await sleep(Math.min(options.retryBaseDelayMs * 2 ** attempt, MAX_RETRY_DELAY_MS));
    }
  }
}

async function refuse(file: string, reason: string): Promise<never> {
  await fs.rm(file, { force: true });
  throw new UpdateError('PACKAGE_REJECTED', reason);
}

const isCacheFile = (name: string) => [PARTIAL_SUFFIX, VERIFIED_SUFFIX, LEGACY_SUFFIX].some((suffix) => name.endsWith(suffix));

/** Downloads of other packages (an offer replaced by a newer one) only take space. */
async function removeOtherPackages(cacheDir: string, ref: PackageRef): Promise<void> {
  for (const name of await fs.readdir(cacheDir)) {
    if (isCacheFile(name) && !name.startsWith(`${ref.sha256}.`)) await fs.rm(path.join(cacheDir, name), { force: true });
  }
}

/** Whether `file` holds the package whole; a file that does not is removed. */
async function isWhole(file: string, ref: PackageRef): Promise<boolean> {
  const { size, hash } = await hashExisting(file, ref.length);
  if (size === 0) return false;
  if (size === ref.length && hash.digest('hex') === ref.sha256) return true;
  await fs.rm(file, { force: true });
  return false;
}

/**
 * A name of this download's own; what an interrupted download of the same package left (its
 * partial file, or an older SDK's `.download`) is renamed to it to be resumed. Of two instances
 * claiming one file, one rename wins; the other starts afresh.
 */
async function claimPartial(cacheDir: string, ref: PackageRef): Promise<string> {
  const own = path.join(cacheDir, `${ref.sha256}.${process.pid}.${randomBytes(6).toString('hex')}${PARTIAL_SUFFIX}`);
  const left = (await fs.readdir(cacheDir)).find((name) => name.startsWith(`${ref.sha256}.`) && (name.endsWith(PARTIAL_SUFFIX) || name.endsWith(LEGACY_SUFFIX)));
  if (left) await fs.rename(path.join(cacheDir, left), own).catch(() => undefined);
  return own;
}

interface Progress {
  size: number;
  /** SHA-256 over the first `size` bytes, ready to continue. */
  hash: Hash;
}

/** The hash of what is already on disk, so a resume continues it; a file past `length` is dropped. */
async function hashExisting(file: string, length: number): Promise<Progress> {
  const hash = createHash('sha256');
  const size = await fs.stat(file).then(
    (s) => s.size,
    () => 0,
  );
  if (size === 0) return { hash, size };
  if (size > length) {
    await fs.rm(file, { force: true });
    return { hash, size: 0 };
  }
  // Exactly the bytes counted: a resume asks for the rest from `size`.
  for await (const chunk of createReadStream(file, { end: size - 1, highWaterMark: CHUNK_BYTES })) hash.update(chunk as Buffer);
  return { hash, size };
}

/** Appends the rest of the package to `file`, from what `existing` holds (or from scratch). */
async function fetchInto(file: string, ref: PackageRef, existing: Progress, options: DownloadOptions): Promise<Progress> {
  const response = await request(ref.url, existing.size > 0 ? { range: `bytes=${existing.size}-` } : {}, options, 0);
  const start = await firstByte(response, ref, existing.size, file);
  const declared = Number(response.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && start + declared !== ref.length) {
    response.destroy();
    return refuse(file, `the server sends ${start + declared} bytes, not the signed ${ref.length}`);
  }
  const meter = new CappedHash(start === 0 ? createHash('sha256') : existing.hash, ref.length - start);
  const out = createWriteStream(file, { flags: start === 0 ? 'w' : 'a', mode: 0o600, highWaterMark: CHUNK_BYTES });
  try {
    await pipeline(response, meter, out);
  } catch (err) {
    // A write still in flight when the transfer failed lands later: the next attempt hashes the
    // file only once it is closed, so what it hashes is what it resumes after.
    if (!out.closed) await once(out, 'close').catch(() => undefined);
    if (meter.overflowed) return refuse(file, `the server sent more than the signed ${ref.length} bytes`);
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (DISK_ERRORS.includes(code)) throw new UpdateError('DISK_FAILED', `the download could not be written: ${(err as Error).message}`, { cause: err });
    throw new TransientFailure(`the download was interrupted: ${(err as Error).message}`);
  }
  return { size: start + meter.bytes, hash: meter.hash };
}

/** Where the body starts in the package: `offset` for a resume the server honoured, 0 for a whole answer. */
async function firstByte(response: http.IncomingMessage, ref: PackageRef, offset: number, file: string): Promise<number> {
  const status = response.statusCode ?? 0;
  // No Range sent, or the server ignored it: the body is the whole package again.
  if (status === 200) return 0;
  if (status === 206 && offset > 0) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers['content-range'] ?? '');
    if (range && (range[3] === '*' || Number(range[3]) === ref.length) && Number(range[1]) === offset) return offset;
    response.destroy();
    // A Range the server gets wrong is a Range not to use: the next attempt starts from scratch.
    await fs.rm(file, { force: true });
    throw new TransientFailure(`the server answered the resume with Content-Range ${range?.[0] ?? 'missing'}`);
  }
  response.destroy();
  // Nothing past what is on disk, which is less than `length`: the package is short.
  if (status === 416) return refuse(file, `the server has no bytes past ${offset} of the signed ${ref.length}`);
  const failure = `the download answered ${status}`;
  throw status >= 500 || status === 408 || status === 429 ? new TransientFailure(failure) : new UpdateError('DOWNLOAD_FAILED', failure);
}

async function request(url: string, headers: Record<string, string>, options: DownloadOptions, redirects: number): Promise<http.IncomingMessage> {
  const { http, https, agents } = await loadWire();
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const client = target.protocol === 'https:' ? https : target.protocol === 'http:' ? http : undefined;
    if (!client) return reject(new UpdateError('DOWNLOAD_FAILED', `${target.protocol} downloads are not supported`));
    let agent: http.Agent | undefined;
    try {
      agent = agents.agentFor(target, { env: options.env ?? process.env, holdsProcess: true });
    } catch (err) {
      if (err instanceof agents.ProxyError) return reject(new UpdateError('DOWNLOAD_FAILED', err.message));
      throw err;
    }
    // identity: the signed length and hash are of the bytes as served, never of a decoded body.
    const req = client.get(target, { headers: { 'user-agent': options.userAgent, 'accept-encoding': 'identity', ...headers }, ...(agent ? { agent } : {}) }, (res) => {
      clearTimeout(noAnswer);
      // Errors while the caller is still deciding what to do with the answer end up in its pipeline;
      // without a listener until then, one would be an uncaught exception.
      res.on('error', () => undefined);
      const location = res.headers.location;
      if (!REDIRECTS.includes(res.statusCode ?? 0) || !location) return resolve(res);
      res.resume();
      if (redirects >= MAX_REDIRECTS) return reject(new UpdateError('DOWNLOAD_FAILED', `more than ${MAX_REDIRECTS} redirects`));
      resolve(request(new URL(location, target).href, headers, options, redirects + 1));
    });
    // Until the answer's head: the socket's idle timeout below cannot fire for a request still waiting
    // for its socket (a proxy that took the connection and never answers CONNECT).
    const noAnswer = setTimeout(() => {
      agent?.destroy();
      req.destroy(new Error(`no answer within ${options.idleTimeoutMs} ms`));
      reject(new TransientFailure(`no answer within ${options.idleTimeoutMs} ms`));
    }, options.idleTimeoutMs);
    // An idle socket (no connection, or no bytes for this long) ends the attempt; the response stream errors too.
    req.setTimeout(options.idleTimeoutMs, () => req.destroy(new Error(`no data for ${options.idleTimeoutMs} ms`)));
    req.on('error', (err) => {
      clearTimeout(noAnswer);
      reject(new TransientFailure(err.message));
    });
  });
}

/** Hashes and counts the bytes passing through, and fails the stream as soon as they exceed `cap`. */
class CappedHash extends Transform {
  bytes = 0;
  overflowed = false;

  constructor(
    readonly hash: Hash,
    private readonly cap: number,
  ) {
    super({ highWaterMark: CHUNK_BYTES });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.bytes + chunk.length > this.cap) {
      this.overflowed = true;
      done(new Error(`more than ${this.cap} bytes`));
      return;
    }
    this.bytes += chunk.length;
    this.hash.update(chunk);
    done(null, chunk);
  }
}
