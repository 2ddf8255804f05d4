import { expect } from 'vitest';
import type { ErrorCode } from '../../server/errors.js';
import type { ApiResponse } from './http.js';

/**
 * docs/contract.md's standard error body, exactly: `{ detail, error_code, status_code, request_id }` with
 * the status code repeated from the response line and the request id from `X-Request-Id`. Routes that add docs/contract.md's `reason` check it themselves.
 */
export function expectError(res: ApiResponse, status: number, errorCode?: ErrorCode): void {
  expect(res.status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['detail', 'error_code', 'request_id', 'status_code']);
  expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  expect(res.body.status_code).toBe(status);
  expect(typeof res.body.detail).toBe('string');
  expect(res.body.detail).not.toBe('');
  if (errorCode) expect(res.body.error_code).toBe(errorCode);
  else expect(typeof res.body.error_code).toBe('string');
}
