import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Db } from '../db/knex.js';
import { migrationStatus } from '../db/migrate.js';
import { defineRoute } from '../http/route.js';
import type { Keyring } from '../signing/keyring.js';
import type { BlobStorage } from '../storage/blob-storage.js';

const Check = z.object({
  ok: z.boolean(),
  detail: z.string().describe('What was found, or why the check failed'),
});

const Diagnostics = z.object({
  server_time: z.iso.datetime().describe("The server's clock when it answered, to the millisecond: `latchkey doctor` compares it with its own"),
  public_base_url: z.string().describe('LATCHKEY_PUBLIC_BASE_URL: the address signed links, pages and protected builds name'),
  database: Check.extend({ pending_migrations: z.array(z.string()) }),
  storage: Check,
  signing_keys: Check.extend({ active_kid: z.string().nullable(), published: z.number().int() }),
});
export type Diagnostics = z.infer<typeof Diagnostics>;

const failure = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** A small object written, read back and removed: storage takes writes and gives back what it took. */
async function probeStorage(storage: BlobStorage): Promise<z.infer<typeof Check>> {
  const key = `diagnostics/probe-${randomBytes(8).toString('hex')}`;
  const bytes = randomBytes(64);
  try {
    await (await storage.stage(Readable.from([bytes]), key)).commit();
    const back = await buffer(await storage.read(key));
    if (!back.equals(bytes)) return { ok: false, detail: 'an object written did not read back the same' };
    return { ok: true, detail: 'an object was written, read back and removed' };
  } catch (err) {
    return { ok: false, detail: `storage: ${failure(err)}` };
  } finally {
    await storage.remove(key).catch(() => undefined);
  }
}

async function probeDatabase(db: Db): Promise<Diagnostics['database']> {
  try {
    const { applied, pending } = await migrationStatus(db);
    return {
      ok: pending.length === 0,
      detail:
        pending.length === 0
          ? `reachable; ${applied.length} migrations applied, none pending`
          : `reachable; ${pending.length} migration(s) pending (${pending.join(', ')}): start this version of the server to run them`,
      pending_migrations: pending,
    };
  } catch (err) {
    return { ok: false, detail: `database: ${failure(err)}`, pending_migrations: [] };
  }
}

/**
 * What an operator checks on a deployment (`latchkey doctor`, docs/operations.md): the database
 * migrated, storage writable, signing keys loaded, and the server's clock and public address. An
 * operator operation: it takes LATCHKEY_ADMIN_TOKEN and tells nothing secret.
 */
export function diagnosticsRoutes(deps: { db: Db; storage: BlobStorage; keyring: Keyring; clock: Clock; publicBaseUrl: string }) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/admin/diagnostics',
      operationId: 'diagnostics',
      tag: 'Operator',
      auth: 'admin',
      rateLimit: 'general',
      summary: 'Check the deployment: database migrated, storage writable, signing keys, clock (operator only; enabled by LATCHKEY_ADMIN_TOKEN)',
      description: 'Always 200 once authenticated: each check says `ok` and why. `latchkey doctor` reads it.',
      response: Diagnostics,
      handler: async (): Promise<Diagnostics> => {
        const [database, storage] = await Promise.all([probeDatabase(deps.db), probeStorage(deps.storage)]);
        const { keys } = deps.keyring.jwks;
        return {
          server_time: deps.clock.now().toISOString(),
          public_base_url: deps.publicBaseUrl,
          database,
          storage,
          signing_keys: {
            ok: keys.length > 0,
            detail: `${keys.length} key(s) published at /v1/public/keys; the first signs`,
            active_kid: keys[0]?.kid ?? null,
            published: keys.length,
          },
        };
      },
    }),
  ];
}
