import { expect } from 'vitest';
import { LicenseError } from '../../../runtime-sdk/index.js';

/** The LicenseError `promise` rejects with; the test fails when it resolves or rejects with anything else. */
export async function licenseErrorOf(promise: Promise<unknown>): Promise<LicenseError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LicenseError);
  return err as LicenseError;
}
