import type { Knex } from 'knex';
import type { PROTECTION_LEVELS } from '../apps/schemas.js';
import type { Db } from '../db/knex.js';
import type { BuildPlatform, BuildProtectionLevel, BuildStatus, ListBuildsFilter, PackageFormat } from './schemas.js';

type AppProtectionLevel = (typeof PROTECTION_LEVELS)[number];
import type { ScanStatus } from './scanning/findings.js';

export interface BuildRow {
  id: string;
  developer_id: string;
  app_id: string;
  status: BuildStatus;
  platform: BuildPlatform;
  python_version: string | null;
  version: string | null;
  /** The entry the upload named, or null for npm's rules. */
  entry: string | null;
  /** What protection applied; null until the job has looked inside the upload. */
  protection_level: BuildProtectionLevel | null;
  scan_status: ScanStatus;
  package_format: PackageFormat | null;
  engine_version: string | null;
  failure_reason: string | null;
  artifact_name: string;
  artifact_key: string;
  artifact_size_bytes: number;
  artifact_sha256: string | null;
  package_name: string | null;
  package_key: string | null;
  protected_size_bytes: number | null;
  sha256: string | null;
  released: boolean;
  signed_package_at: Date | null;
  created_at: Date;
  completed_at: Date | null;
}

export type NewBuild = Pick<
  BuildRow,
  | 'id'
  | 'developer_id'
  | 'app_id'
  | 'platform'
  | 'python_version'
  | 'version'
  | 'entry'
  | 'protection_level'
  | 'artifact_name'
  | 'artifact_key'
  | 'artifact_size_bytes'
  | 'created_at'
>;

/** What the protection job needs beyond the build: its app's settings. */
export interface BuildForProcessing extends BuildRow {
  app_name: string;
  app_protection_level: AppProtectionLevel;
  fingerprint_salt: string;
}

export type ReadyFields = Pick<
  BuildRow,
  'version' | 'protection_level' | 'package_format' | 'engine_version' | 'package_name' | 'package_key' | 'protected_size_bytes' | 'sha256' | 'completed_at'
> & {
  /** The content key of an encrypted build, sealed under the master key. */
  content_key_sealed: string | null;
};

/** Developer operations are scoped by developer and app: another tenant's build is not found. */
export function createBuildsStore(db: Db) {
  const scoped = (q: Knex | Knex.Transaction, developerId: string, appId: string) => q<BuildRow>('builds').where({ developer_id: developerId, app_id: appId });

  return {
    findApp: (developerId: string, appId: string) =>
      db('apps')
        .where({ id: appId, developer_id: developerId })
        .first<{ id: string; platforms: string[]; protection_level: AppProtectionLevel } | undefined>('id', 'platforms', 'protection_level'),

    insert: (trx: Knex.Transaction, row: NewBuild) =>
      trx('builds')
        .insert(row)
        .returning('*')
        .then((r: BuildRow[]) => r[0]!),

    async list(developerId: string, appId: string, filter: ListBuildsFilter): Promise<{ rows: BuildRow[]; total: number }> {
      const query = () => {
        const q = scoped(db, developerId, appId);
        if (filter.status) q.where({ status: filter.status });
        return q;
      };
      const rows: (BuildRow & { total: number })[] = await query()
        .select('*', db.raw('count(*) OVER () AS total'))
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
        .limit(filter.limit)
        .offset(filter.offset);
      if (rows.length > 0) return { rows, total: rows[0]!.total };
      const counted = await query().count<{ count: string }[]>('* as count');
      return { rows, total: Number(counted[0]!.count) };
    },

    find: (developerId: string, appId: string, id: string) => scoped(db, developerId, appId).where({ id }).first(),

    /** For a signed download link, which is its own authorisation. */
    findReady: (id: string) => db<BuildRow>('builds').where({ id, status: 'READY' }).first(),

    remove: (developerId: string, appId: string, id: string) =>
      scoped(db, developerId, appId)
        .where({ id })
        .delete()
        .returning('*')
        .then((r: BuildRow[]) => r[0]),

    setReleased: (q: Knex, developerId: string, appId: string, id: string, released: boolean) =>
      scoped(q, developerId, appId)
        .where({ id, status: 'READY' })
        .update({ released })
        .returning('*')
        .then((r: BuildRow[]) => r[0]),

    /** The new package of a READY build; answers the build as it was before (its old package key), or undefined. */
    replacePackage: (
      developerId: string,
      appId: string,
      id: string,
      fields: Pick<BuildRow, 'package_key' | 'package_name' | 'protected_size_bytes' | 'sha256' | 'signed_package_at'>,
      /** Runs on the locked row before it changes (the storage quota): throwing leaves it as it was. */
      beforeChange: (trx: Knex.Transaction, before: BuildRow) => Promise<void>,
    ) =>
      db.transaction(async (trx) => {
        const before = await scoped(trx, developerId, appId).where({ id, status: 'READY' }).forUpdate().first();
        if (!before) return undefined;
        await beforeChange(trx, before);
        const [after] = await trx<BuildRow>('builds').where({ id }).update(fields).returning('*');
        return { before, after: after! };
      }),

    // The job's side: by id alone.

    /** Marks the build PROCESSING (again, after a crash); undefined when it is gone or already finished. */
    startProcessing: async (id: string) => {
      const { rows } = await db.raw<{ rows: BuildForProcessing[] }>(
        `UPDATE builds SET status = 'PROCESSING' FROM apps
         WHERE apps.id = builds.app_id AND builds.id = ? AND builds.status IN ('QUEUED', 'PROCESSING')
         RETURNING builds.*, apps.name AS app_name, apps.protection_level AS app_protection_level, apps.fingerprint_salt`,
        [id],
      );
      return rows[0];
    },

    isUnfinished: async (id: string) => Boolean(await db('builds').where({ id }).whereIn('status', ['QUEUED', 'PROCESSING']).first('id')),

    setArtifactDigest: (id: string, sha256: string) => db('builds').where({ id }).update({ artifact_sha256: sha256 }),

    /** Only a PROCESSING build finishes; false when it was deleted (or finished by another runner) meanwhile. */
    markReady: async (id: string, fields: ReadyFields) =>
      (await db('builds')
        .where({ id, status: 'PROCESSING' })
        .update({ ...fields, status: 'READY', scan_status: 'CLEAN', failure_reason: null })) === 1,

    /** `scanStatus` when the scan decided the failure; left as it is otherwise. */
    markFailed: async (id: string, reason: string, at: Date, scanStatus?: ScanStatus) =>
      (await db('builds')
        .where({ id })
        .whereIn('status', ['QUEUED', 'PROCESSING'])
        .update({ status: 'FAILED', failure_reason: reason, completed_at: at, ...(scanStatus ? { scan_status: scanStatus } : {}) })) === 1,
  };
}

export type BuildsStore = ReturnType<typeof createBuildsStore>;
