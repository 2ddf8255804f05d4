import type { Readable } from 'node:stream';
import type Koa from 'koa';
import { RequestError } from '../errors.js';
import { boundaryOf, parseMultipart, type FileReceiver } from './multipart-parser.js';

/** Where a request's file part goes; the request's path parameters may name its place (a new build of this app). */
export interface RequestFileReceiver<T> {
  receive(stream: Readable, params: Record<string, string>): Promise<T>;
  discard(stored: T): Promise<void>;
}

/** A file part as a handler receives it: its name as the client gave it, and where it was streamed. */
export interface UploadedFile<T> {
  filename: string;
  stored: T;
}

export interface MultipartSpec<T = unknown> {
  /** The one form field that carries a file. */
  fileField: string;
  fileDescription: string;
  maxFileBytes: number;
  receiver: RequestFileReceiver<T>;
}

/** Room for the text fields and part headers around the file. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
const MAX_FIELDS = 16;
const MAX_FIELD_BYTES = 1024;

/**
 * Reads a `multipart/form-data` body: text fields into an object, the file part streamed through
 * `spec.receiver` (never whole in memory) up to `maxFileBytes`, 413 beyond, with whatever was
 * received removed again. Answers `{ ...fields, [fileField]: UploadedFile }`.
 */
export async function readMultipart<T>(ctx: Koa.Context, spec: MultipartSpec<T>, params: Record<string, string>): Promise<Record<string, unknown>> {
  const boundary = ctx.is('multipart/form-data') ? boundaryOf(ctx.get('content-type')) : null;
  if (!ctx.is('multipart/form-data')) throw new RequestError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be multipart/form-data');
  if (!boundary) throw new RequestError('VALIDATION_FAILED', 'body: multipart/form-data without a boundary');
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > spec.maxFileBytes + FORM_OVERHEAD_BYTES) {
    // Refused before a byte is stored; the connection closes rather than carrying the rest.
    ctx.set('Connection', 'close');
    throw new RequestError('PAYLOAD_TOO_LARGE', `${spec.fileField} exceeds the ${spec.maxFileBytes}-byte limit`);
  }
  try {
    const { fields, file } = await parseMultipart(
      ctx.req,
      boundary,
      { fileField: spec.fileField, maxFileBytes: spec.maxFileBytes, maxFields: MAX_FIELDS, maxFieldBytes: MAX_FIELD_BYTES },
      { receive: (stream) => spec.receiver.receive(stream, params), discard: (stored) => spec.receiver.discard(stored) } satisfies FileReceiver<T>,
    );
    return file ? { ...fields, [spec.fileField]: file satisfies UploadedFile<T> } : fields;
  } catch (err) {
    // The rest is drained, so the client reads the answer rather than a reset connection.
    ctx.req.resume();
    throw err;
  }
}

/** The file a parsed multipart body carries, to discard when the request fails after all. */
export function fileOf<T>(fields: Record<string, unknown> | undefined, spec: MultipartSpec<T>): UploadedFile<T> | undefined {
  const value = fields?.[spec.fileField];
  return value && typeof value === 'object' && 'stored' in value ? (value as UploadedFile<T>) : undefined;
}
