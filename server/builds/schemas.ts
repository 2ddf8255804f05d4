import { z } from 'zod';
import { PLATFORMS } from '../apps/schemas.js';
import { PageQuery } from '../http/pagination.js';
import type { UploadedFile } from '../http/multipart.js';
import type { StagedBlob } from '../storage/blob-storage.js';
import { SCAN_STATUSES } from './scanning/findings.js';

/** QUEUED on upload, PROCESSING while its job scans and protects it, then READY or FAILED (with a reason). */
export const BUILD_STATUSES = ['QUEUED', 'PROCESSING', 'READY', 'FAILED'] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];

/** An app's platforms, plus `cross_platform`: a build for no single operating system, offered to every device. */
export const BUILD_PLATFORMS = [...PLATFORMS, 'cross_platform'] as const;
export type BuildPlatform = (typeof BUILD_PLATFORMS)[number];

/**
 * What customers download: `single_executable` (the app and Node in one file), `javascript_bundle`
 * (one .mjs file for Node >= 20.12: cross_platform builds, or where no Node binary is configured for
 * the platform), `as_uploaded` (anything but a JavaScript app, or protection level `none`).
 */
/**
 * What customers download: a Node single executable (linux, Windows), an archive of the signed Node
 * runtime, the app and a launcher (macOS), a JavaScript bundle for Node >= 20.12 (`cross_platform`),
 * or the upload itself.
 */
export const PACKAGE_FORMATS = ['single_executable', 'launcher_archive', 'javascript_bundle', 'as_uploaded'] as const;
export type PackageFormat = (typeof PACKAGE_FORMATS)[number];

/**
 * What protection a build got (docs/protocol.md, "Protected builds"): `encrypted` (the app's code
 * and files encrypted, the key released only to licensed devices), `encrypted_hardened` (also
 * minified and checked for modification at every start), `none` (delivered as uploaded).
 */
export const BUILD_PROTECTION_LEVELS = ['none', 'encrypted', 'encrypted_hardened'] as const;
export type BuildProtectionLevel = (typeof BUILD_PROTECTION_LEVELS)[number];

/** A version label as developers write them; also what the runtime reports as the installed version. */
export const Version = z.string().regex(/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/, 'must be a version such as 1.4.2');

/** An artifact received for a new build: the build's id comes first, so the bytes stream straight to its key. */
export interface StagedArtifact {
  buildId: string;
  blob: StagedBlob;
}

const uploadedFile = <T>(field: string, sizeOf: (stored: T) => number) =>
  z
    .custom<UploadedFile<T>>((v) => typeof v === 'object' && v !== null && 'stored' in v, `required: the ${field} as a file part`)
    .refine((f) => sizeOf(f.stored) > 0, 'must not be empty');

/**
 * The file the app starts from, when npm's rules (`bin`, `main`, `exports`, `index.js`) do not pick
 * the one wanted: a path relative to the app's folder (where its package.json is), or one of its
 * `bin` commands. Never absolute, never climbing out with `..`.
 */
export const AppEntry = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => !/[\0\\]/.test(p), 'must be a relative path with / separators')
  .refine((p) => !p.startsWith('/') && !/^[A-Za-z]:/.test(p), 'must be a path relative to the app, not an absolute one')
  .refine((p) => !p.split('/').includes('..'), 'must stay inside the app (no ..)')
  .transform((p) =>
    p
      .split('/')
      .filter((part) => part !== '' && part !== '.')
      .join('/'),
  )
  .refine((p) => p !== '', 'must name a file in the app')
  .describe(
    'The file the app starts from, overriding package.json: a path relative to the folder holding package.json (or to the ' +
      "archive's top), or one of package.json's `bin` command names. Default: `bin` (the only command, or the one named after the package), then `main`, then `exports`, then index.js",
  );

export const UploadBuildBody = z.strictObject({
  artifact: uploadedFile<StagedArtifact>('artifact', (a) => a.blob.size),
  platform: z.enum(BUILD_PLATFORMS, { error: `must be one of ${BUILD_PLATFORMS.join(', ')}` }),
  python_version: z
    .string()
    .regex(/^\d+(\.\d+){0,2}$/, 'must be a Python version such as 3.12')
    .optional()
    .describe('Stored with the build for reference'),
  version: Version.optional().describe("The app version the build carries; default: package.json's version of a JavaScript app"),
  entry: AppEntry.optional(),
});
export type UploadBuildInput = z.infer<typeof UploadBuildBody>;

export const SignedPackageBody = z.strictObject({ package: uploadedFile<StagedBlob>('package', (b) => b.size) });

export const ListBuildsQuery = PageQuery.extend({
  status: z
    .string()
    .transform((s) => s.toUpperCase())
    .pipe(z.enum(BUILD_STATUSES))
    .optional()
    .describe('QUEUED, PROCESSING, READY or FAILED (any case)'),
});
export type ListBuildsFilter = z.infer<typeof ListBuildsQuery>;

export const BuildParams = z.object({ app_id: z.string().max(64), build_id: z.string().max(64) });

export const Build = z.object({
  id: z.string(),
  app_id: z.string(),
  status: z.enum(BUILD_STATUSES),
  platform: z.enum(BUILD_PLATFORMS),
  python_version: z.string().nullable(),
  version: z.string().nullable(),
  entry: z.string().nullable().describe("The entry named on upload (`entry`), or null for npm's rules"),
  protection_level: z
    .enum(BUILD_PROTECTION_LEVELS)
    .nullable()
    .describe(
      "The protection applied: `encrypted` or `encrypted_hardened` for JavaScript apps (per the app's `standard` or `hardened` level), `none` for anything delivered as uploaded; null until processed, since what applies depends on what the upload holds",
    ),
  scan_status: z.enum(SCAN_STATUSES).describe('PENDING until scanned; INFECTED or REJECTED fail the build'),
  package_format: z
    .enum(PACKAGE_FORMATS)
    .nullable()
    .describe(
      'null until READY. `single_executable`: runs without Node (linux, Windows); `launcher_archive`: a .tar.gz with the signed Node runtime, the app and `bin/<app>` (macOS); `javascript_bundle`: a .mjs that needs Node >= 20.12 (cross_platform); `as_uploaded`: the upload itself. Every protected package carries THIRD_PARTY_NOTICES, the licences of the open-source code around the app (the engine, what it bundles, and Node where embedded): an asset of the executable, a file beside the app in the archive, the closing comment of the .mjs',
    ),
  engine_version: z.string().nullable().describe('Runtime engine injected by protection (`1.0.0.0.0.N`); null when none was'),
  failure_reason: z.string().nullable().describe('Why a FAILED build failed, in words'),
  artifact_name: z.string(),
  artifact_size_bytes: z.number().int(),
  artifact_sha256: z.string().nullable().describe('SHA-256 of the upload; null until its job has read it'),
  package_name: z.string().nullable().describe('File name customers download'),
  protected_size_bytes: z.number().int().nullable(),
  sha256: z.string().nullable().describe('SHA-256 of what customers download (the ETag of the download)'),
  released: z.boolean().describe('Matters under the app delivery mode released_only'),
  signed_package_at: z.iso.datetime().nullable().describe('When the package was replaced by a signed one (PUT .../signed-package)'),
  signature_format: z
    .enum(['pe', 'mach_o'])
    .nullable()
    .describe(
      'What a signed package of this build must be (Replace with Signed Package): `pe`, a PE with an Authenticode signature (Windows); `mach_o`, a Mach-O with LC_CODE_SIGNATURE (macOS); null when the build takes none (before READY, other platforms, and a macOS launcher archive, whose runtime keeps its vendor signature)',
    ),
  awaits_signed_package: z
    .boolean()
    .describe('True while a push of this build is refused with 409 reason build_not_signed: a Windows or macOS build not yet replaced with a signed package'),
  created_at: z.iso.datetime(),
  completed_at: z.iso.datetime().nullable(),
});

export const DownloadLink = z.object({
  download_url: z.url().describe('Signed; anyone holding it can download until it expires'),
  expires_at: z.iso.datetime(),
});

/** Loose on purpose: a link with its signature cut off or mangled is a 403 like any forged one, not a 400. */
export const DownloadQuery = z.object({
  expires: z.string().max(20).optional(),
  signature: z.string().max(128).optional(),
});
export const DownloadParams = z.object({ build_id: z.string().max(64) });
