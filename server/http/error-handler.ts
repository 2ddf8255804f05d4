import type Koa from 'koa';
import type { Logger } from 'pino';
import { RequestError } from '../errors.js';
import { quotaErrorFromDatabase } from '../quotas/index.js';
import { StorageUnavailableError } from '../storage/blob-storage.js';
import { bodyLeftHalfRead } from './body.js';
import type { RequestState } from './logging.js';

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', '57P01', '57P02', '57P03', '08006', '08001']);

/** The database is down or restarting: the client should retry, not treat it as a bug. */
function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string };
  return UNAVAILABLE_CODES.has(e?.code ?? '') || e?.name === 'KnexTimeoutError' || /Connection terminated|connect ECONNREFUSED/.test(e?.message ?? '');
}

/**
 * A write the disk had no room for: the filesystem's (ENOSPC, or EDQUOT past a quota) or
 * PostgreSQL's (53100 disk_full). What was half-written is already gone (storage removes it, a
 * transaction rolls back); only the operator can make room, so it is logged as an error.
 */
function isStorageFull(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return code === 'ENOSPC' || code === 'EDQUOT' || code === '53100';
}

/** The closed error a failure answers with; what is not one is logged (a bug, a full disk, an outage). */
export function toRequestError(err: unknown, log: Logger): RequestError {
  if (err instanceof RequestError) return err;
  // A per-tenant quota the database enforces (licenses, delivery emails): 429 with Retry-After.
  const quota = quotaErrorFromDatabase(err);
  if (quota) return quota;
  if (isStorageFull(err)) {
    log.error({ err }, 'storage full');
    return new RequestError('INSUFFICIENT_STORAGE', 'The server has no room left to store this: nothing of it was kept; retry later, or ask the operator to free disk space');
  }
  if (err instanceof StorageUnavailableError) {
    log.error({ err }, 'object storage unavailable');
    return new RequestError('STORAGE_UNAVAILABLE', 'The file storage is unavailable right now (an upload it cut off was not kept); retry shortly', {
      headers: { 'Retry-After': '5' },
    });
  }
  if (isDatabaseUnavailable(err)) {
    log.warn({ err }, 'database unavailable');
    return new RequestError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; retry shortly', {
      headers: { 'Retry-After': '1' },
    });
  }
  log.error({ err }, 'unhandled error');
  return new RequestError('INTERNAL_ERROR', 'Internal server error');
}

/** The error body; the request's id (X-Request-Id, req_id in its log lines) is what a developer quotes to the operator. */
export function errorBodyOf(error: RequestError, state: RequestState) {
  return { ...error.toBody(), request_id: state.requestId };
}

/**
 * Renders every failure as `{ detail, error_code, status_code, request_id }`: raised errors, unknown routes
 * (404), known routes with another method (405), and anything unexpected (500, logged).
 */
export function errorHandler(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) throw new RequestError('NOT_FOUND', `No route for ${ctx.method} ${ctx.path}`);
        if (ctx.status === 405 || ctx.status === 501) {
          throw new RequestError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${ctx.path}`);
        }
      }
    } catch (err) {
      const error = toRequestError(err, ctx.state.log);
      for (const [name, value] of Object.entries(error.extra.headers ?? {})) ctx.set(name, value);
      ctx.status = error.status;
      ctx.body = errorBodyOf(error, ctx.state as RequestState);
      if (bodyLeftHalfRead(ctx.req)) ctx.set('Connection', 'close');
    }
  };
}
