import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { portalApiTypes } from '../../server/scripts/portal-api-types-source.js';

// The portal's browser code is typed by the committed api-schema.d.ts: a route schema changed
// without `npm run portal:api-types` would leave the portal type-checked against the old API.
describe('the portal API types', () => {
  it('are the ones the current route schemas give', { timeout: 60_000 }, async () => {
    const committed = fs.readFileSync(path.resolve(import.meta.dirname, '../../server/portal/client/api-schema.d.ts'), 'utf8');
    expect(committed === (await portalApiTypes()), 'server/portal/client/api-schema.d.ts is stale: run npm run portal:api-types').toBe(true);
  });
});
