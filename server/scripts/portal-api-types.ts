/**
 * Writes server/portal/client/api-schema.d.ts: openapi-typescript's types of the OpenAPI document
 * the routes' zod schemas make, which every portal API call is typed with (a renamed field breaks
 * `npm run typecheck`, not the page). Run `npm run portal:api-types` after changing a route schema;
 * test/portal/api-types.test.ts fails while the committed file is stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { portalApiTypes } from './portal-api-types-source.js';

const target = path.resolve(import.meta.dirname, '../portal/client/api-schema.d.ts');
fs.writeFileSync(target, await portalApiTypes());
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
