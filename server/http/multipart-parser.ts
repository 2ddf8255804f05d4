import { Readable, Writable } from 'node:stream';
import { RequestError } from '../errors.js';
import { bodyCutOff } from './body.js';

/**
 * A streaming multipart/form-data parser (RFC 7578), for uploads of gigabytes. It finds boundaries
 * with `Buffer.indexOf` (native, vectorised), hands file bytes on without copying, and is written
 * to by `pipe` (flowing mode, like a plain pipe to disk). busboy, which searches in JavaScript, and
 * an async-iterating parser both measured well under a plain pipe's throughput here.
 */

export interface FormLimits {
  fileField: string;
  maxFileBytes: number;
  maxFields: number;
  maxFieldBytes: number;
}

/** Where the one file part goes (storage), and how a received one is removed when the request fails after all. */
export interface FileReceiver<T> {
  receive(stream: Readable): Promise<T>;
  discard(stored: T): Promise<void>;
}

export interface ParsedForm<T> {
  fields: Record<string, string>;
  file?: { filename: string; stored: T };
}

const MAX_HEADER_BYTES = 8 * 1024;
const FILE_BUFFER_BYTES = 1024 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** The file part's consumer (storage) failed; its own error is what the request fails with. */
class FilePartClosed extends Error {}

const bad = (detail: string) => new RequestError('VALIDATION_FAILED', `body: ${detail}`);
const badField = (name: string, detail: string) => new RequestError('VALIDATION_FAILED', `body.${name}: ${detail}`);

/** The boundary of a multipart/form-data content type, or null. */
export function boundaryOf(contentType: string): string | null {
  const match = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return match ? (match[1] ?? match[2]!) : null;
}

/** A part's name and, for a file part, its file name, from the part's headers. */
function partOf(headerBlock: string): { name: string; filename: string | undefined } {
  const disposition = headerBlock
    .split('\r\n')
    .find((line) => /^content-disposition\s*:/i.test(line))
    ?.replace(/^[^:]*:\s*/, '');
  if (!disposition || !/^form-data\b/i.test(disposition)) throw bad('a part has no Content-Disposition: form-data header');
  const params = new Map<string, string>();
  for (const [, key, quoted, bare] of disposition.matchAll(/;\s*([^=\s;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g)) {
    params.set(key!.toLowerCase(), quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare!.trim());
  }
  const name = params.get('name');
  if (name === undefined) throw bad('a part has no name');
  // RFC 5987 `filename*=UTF-8''...` wins over `filename` when both are there.
  const extended = /^utf-8''(.*)$/i.exec(params.get('filename*') ?? '')?.[1];
  let filename = params.get('filename');
  if (extended !== undefined) {
    try {
      filename = decodeURIComponent(extended);
    } catch {
      // a malformed encoding leaves the plain `filename`
    }
  }
  return { name, filename };
}

type State = 'preamble' | 'afterBoundary' | 'headers' | 'body' | 'done';

/** The file part: a Readable whose consumer's pace holds the parser, and so the socket, back. */
class FilePart extends Readable {
  /** The parser's pending write callback, called when the consumer wants more. */
  onDemand: (() => void) | undefined;
  constructor() {
    super({ highWaterMark: FILE_BUFFER_BYTES });
  }
  override _read(): void {
    const resume = this.onDemand;
    this.onDemand = undefined;
    resume?.();
  }
}

/**
 * Parses as it is written to. Everything but the file part's consumer is synchronous: a chunk is
 * parsed at once, and its write callback waits only while the file part's buffer is full.
 */
class FormParser<T> extends Writable {
  readonly fields: Record<string, string> = {};
  received: { filename: string; stored: T } | undefined;
  private readonly delimiter: Buffer;
  /** Bytes a delimiter may need beyond a chunk's end. */
  private readonly keep: number;
  private state: State = 'preamble';
  /** Bytes not yet consumed outside part bodies; a CRLF first makes every delimiter `\r\n--boundary`. */
  private pending: Buffer = CRLF;
  /** The end of a body that may begin a delimiter: the next chunk decides. */
  private tail: Buffer = Buffer.alloc(0);
  private part: { name: string; filename: string | undefined } | undefined;
  private fieldChunks: Buffer[] = [];
  private fieldBytes = 0;
  private fieldCount = 0;
  private file: { stream: FilePart; bytes: number } | undefined;
  /** File parts handed to the receiver; settled before the form is. */
  private readonly receiving: Promise<unknown>[] = [];

  constructor(
    boundary: string,
    private readonly limits: FormLimits,
    private readonly receiver: FileReceiver<T>,
  ) {
    super({ highWaterMark: FILE_BUFFER_BYTES });
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
    this.keep = this.delimiter.length - 1;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    try {
      this.feed(chunk);
    } catch (err) {
      return done(err as Error);
    }
    const file = this.file;
    if (file && file.stream.readableLength >= FILE_BUFFER_BYTES && !file.stream.destroyed) file.stream.onDemand = () => done();
    else done();
  }

  override _final(done: (err?: Error | null) => void): void {
    if (this.state !== 'done') return done(bad('malformed multipart/form-data (Unexpected end of form)'));
    Promise.all(this.receiving).then(() => done(), done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.file?.stream.destroy();
    done(err);
  }

  /** Removes what was received, once the form failed; answers the receiver's error, if it failed. */
  async discardAll(): Promise<unknown> {
    let failure: unknown;
    for (const result of await Promise.allSettled(this.receiving)) {
      if (result.status === 'fulfilled') await this.receiver.discard(result.value as T);
      else failure ??= result.reason;
    }
    return failure;
  }

  // Through methods: `step` and `feedBody` move the state, which TypeScript's narrowing cannot see.
  private inBody = () => this.state === 'body';
  private finished = () => this.state === 'done';

  private feed(chunk: Buffer): void {
    let data: Buffer | null = chunk;
    while (data !== null && !this.finished()) {
      if (this.inBody()) {
        const after = this.feedBody(data);
        if (after === null) return;
        this.endPart();
        this.state = 'afterBoundary';
        this.pending = after;
      } else {
        this.pending = this.pending.length > 0 ? Buffer.concat([this.pending, data]) : data;
      }
      data = null;
      while (!this.inBody() && !this.finished() && this.step());
      if (this.inBody()) {
        data = this.pending;
        this.pending = Buffer.alloc(0);
      }
    }
  }

  /**
   * Body bytes: what precedes a delimiter belongs to the part; answers what follows it, or null when
   * the chunk is all body. The last `keep` bytes wait in `tail` until the next chunk shows whether a
   * delimiter starts among them; only that seam is ever copied.
   */
  private feedBody(chunk: Buffer): Buffer | null {
    const { delimiter, keep } = this;
    if (this.tail.length > 0) {
      const tail = this.tail;
      const seam = Buffer.concat([tail, chunk.subarray(0, keep)]);
      const at = seam.indexOf(delimiter);
      if (at >= 0 && at < tail.length) {
        this.tail = Buffer.alloc(0);
        this.append(seam.subarray(0, at));
        return chunk.subarray(at + delimiter.length - tail.length);
      }
      if (chunk.length < keep) {
        // Too short to rule a delimiter out yet.
        this.tail = seam.subarray(Math.max(0, seam.length - keep));
        this.append(seam.subarray(0, Math.max(0, seam.length - keep)));
        return null;
      }
      this.tail = Buffer.alloc(0);
      this.append(tail);
    }
    const at = chunk.indexOf(delimiter);
    if (at >= 0) {
      this.append(chunk.subarray(0, at));
      return chunk.subarray(at + delimiter.length);
    }
    const safe = Math.max(0, chunk.length - keep);
    this.tail = chunk.subarray(safe);
    this.append(chunk.subarray(0, safe));
    return null;
  }

  /** Body bytes of the current part. */
  private append(data: Buffer): void {
    if (data.length === 0) return;
    const { file, part, limits } = this;
    if (file) {
      file.bytes += data.length;
      if (file.bytes > limits.maxFileBytes) {
        throw new RequestError('PAYLOAD_TOO_LARGE', `${limits.fileField} exceeds the ${limits.maxFileBytes}-byte limit`);
      }
      // A consumer that failed (storage) has destroyed the stream: no use reading on.
      if (file.stream.destroyed) throw new FilePartClosed();
      file.stream.push(data);
    } else if (part && part.filename === undefined) {
      this.fieldBytes += data.length;
      if (this.fieldBytes > limits.maxFieldBytes) throw badField(part.name, `longer than ${limits.maxFieldBytes} bytes`);
      this.fieldChunks.push(data);
    }
    // An empty file name (a form sent with no file chosen): its bytes are dropped.
  }

  private startPart(headerBlock: string): void {
    const part = partOf(headerBlock);
    const { limits } = this;
    this.part = part;
    if (Object.hasOwn(this.fields, part.name) || (this.receiving.length > 0 && part.name === limits.fileField)) throw badField(part.name, 'given twice');
    if (part.filename === undefined) {
      if (++this.fieldCount > limits.maxFields) throw bad(`more than ${limits.maxFields} fields`);
      this.fieldChunks = [];
      this.fieldBytes = 0;
      return;
    }
    if (part.filename === '') return;
    if (part.name !== limits.fileField) throw badField(part.name, `unexpected file; send one file, as ${limits.fileField}`);
    const stream = new FilePart();
    const filename = part.filename;
    const receiving = this.receiver.receive(stream);
    // A receiver failing fails the form at its end, even while the parser waits on the file's buffer.
    receiving.then(
      (stored) => (this.received = { filename, stored }),
      () => stream.onDemand?.(),
    );
    this.receiving.push(receiving);
    this.file = { stream, bytes: 0 };
  }

  private endPart(): void {
    const { file, part } = this;
    if (file) {
      file.stream.push(null);
      this.file = undefined;
    } else if (part && part.filename === undefined) {
      this.fields[part.name] = Buffer.concat(this.fieldChunks).toString('utf8');
    }
    this.part = undefined;
  }

  /** Consumes the bytes in `pending` outside part bodies; answers false when it needs more. */
  private step(): boolean {
    const { delimiter, keep } = this;
    switch (this.state) {
      case 'preamble': {
        const at = this.pending.indexOf(delimiter);
        if (at < 0) {
          this.pending = this.pending.subarray(Math.max(0, this.pending.length - keep));
          return false;
        }
        this.pending = this.pending.subarray(at + delimiter.length);
        this.state = 'afterBoundary';
        return true;
      }
      case 'afterBoundary': {
        // `--` ends the form; otherwise optional whitespace and CRLF start the next part's headers.
        const pending = this.pending;
        if (pending.length < 2) return false;
        if (pending[0] === 0x2d && pending[1] === 0x2d) {
          this.state = 'done';
          return false;
        }
        const lineEnd = pending.indexOf(CRLF);
        if (lineEnd < 0) {
          if (pending.length > 256) throw bad('malformed multipart/form-data (a boundary is followed by neither CRLF nor --)');
          return false;
        }
        if (!/^[ \t]*$/.test(pending.subarray(0, lineEnd).toString('latin1'))) throw bad('malformed multipart/form-data (text after a boundary)');
        this.pending = pending.subarray(lineEnd + 2);
        this.state = 'headers';
        return true;
      }
      case 'headers': {
        const pending = this.pending;
        if (pending.subarray(0, 2).equals(CRLF)) throw bad('a part has no Content-Disposition: form-data header');
        const end = pending.indexOf(HEADER_END);
        if (end < 0) {
          if (pending.length > MAX_HEADER_BYTES) throw bad(`part headers longer than ${MAX_HEADER_BYTES} bytes`);
          return false;
        }
        this.startPart(pending.subarray(0, end).toString('utf8'));
        this.pending = pending.subarray(end + HEADER_END.length);
        this.state = 'body';
        return true;
      }
      default:
        return false;
    }
  }
}

/**
 * Parses a multipart/form-data `body` into text fields and at most one file part
 * (`limits.fileField`), streamed through `receiver` up to `limits.maxFileBytes` (413 past it).
 * Malformed forms and forms past the limits are 400s. On any failure a received file is discarded
 * and `body` is left unpiped, for the caller to drain (so the client reads the answer).
 */
export async function parseMultipart<T>(body: Readable, boundary: string, limits: FormLimits, receiver: FileReceiver<T>): Promise<ParsedForm<T>> {
  const parser = new FormParser(boundary, limits, receiver);
  try {
    await new Promise<void>((resolve, reject) => {
      parser.once('finish', resolve);
      parser.once('error', reject);
      // Gone before the parser started (its events past: a pipe from it would never end), or while it reads.
      if (body.destroyed) return reject(bodyCutOff());
      body.once('error', () => reject(bodyCutOff()));
      body.once('aborted', () => reject(bodyCutOff()));
      body.pipe(parser);
    });
  } catch (err) {
    body.unpipe(parser);
    parser.destroy();
    const receiverError = await parser.discardAll();
    throw err instanceof FilePartClosed && receiverError ? receiverError : err;
  }
  return parser.received ? { fields: parser.fields, file: parser.received } : { fields: parser.fields };
}
