import http from 'node:http';
import type { Clock } from '../../../runtime-sdk/clock.js';
import { DOCUMENT_TYPES, verifyJws, type UpdateCheckRequest, type UpdateManifestClaims } from '../../../runtime-sdk/protocol.js';
import { runtimeClaims, TestSigner } from './authority-keys.js';
import { closeNow, listenOnLoopback } from '../../support/local-http.js';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface FakeLicense {
  id: string;
  status: 'ACTIVE' | 'REVOKED' | 'EXPIRED';
  deviceLimit: number;
  devices: Set<string>;
}

type Reply = { status: number; body: unknown; headers?: Record<string, string> } | 'drop';

/** What a push says about its build; the check fills in whom it is for. */
export type ManifestPush = Pick<UpdateManifestClaims, 'build_id' | 'version' | 'sha256' | 'length' | 'url' | 'release_notes' | 'serial'>;

/** A manifest lives minutes, as the authority's do. */
const MANIFEST_LIFETIME_SECONDS = 600;

/**
 * A local stand-in for the license authority speaking the issue-3 contract: activate, refresh,
 * error bodies `{ detail, error_code, status_code }`. Records every request body so tests can check
 * what leaves the process; can go "down" (connections dropped) or answer with scripted replies.
 */
export class FakeAuthority {
  readonly signer = new TestSigner();
  readonly requests: RecordedRequest[] = [];
  /** Every token it signed, oldest first. */
  readonly issuedTokens: string[] = [];
  readonly licenses = new Map<string, FakeLicense>();
  down = false;
  /** Replies used, in order, before the normal logic. */
  readonly scripted: Reply[] = [];
  /** Rewrites each issued token's claims (bad app, other device, ...). */
  mutateClaims: ((claims: ReturnType<typeof runtimeClaims>) => ReturnType<typeof runtimeClaims>) | undefined;
  /** The push `POST /v1/updates/check` answers for an active license, bound to the asking device; null answers 204. */
  push: ManifestPush | null = null;
  /** Rewrites each manifest's claims before signing (another device, expired, ...). */
  mutateManifest: ((claims: UpdateManifestClaims) => Record<string, unknown>) | undefined;
  /** Signs manifests; another signer makes signatures the app's pinned keys refuse. */
  manifestSigner: TestSigner = this.signer;
  url = '';
  private server = http.createServer((req, res) => void this.handle(req, res));

  constructor(
    private readonly clock: Clock,
    readonly appId = 'app_test',
  ) {}

  async start(): Promise<this> {
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  async close(): Promise<void> {
    await closeNow(this.server);
  }

  addLicense(key: string, options: { deviceLimit?: number } = {}): FakeLicense {
    const license: FakeLicense = { id: `lic_${key.slice(0, 4).toLowerCase()}`, status: 'ACTIVE', deviceLimit: options.deviceLimit ?? 2, devices: new Set() };
    this.licenses.set(key, license);
    return license;
  }

  get publicKeys() {
    return { keys: [this.signer.publicJwk] };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    this.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    const reply = this.down ? 'drop' : (this.scripted.shift() ?? this.answer(req.url ?? '', body));
    if (reply === 'drop') {
      req.socket.destroy();
      return;
    }
    res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
    res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
  }

  private answer(path: string, text: string): Reply {
    const body = JSON.parse(text) as { license_key?: string; device_fingerprint?: string; token?: string };
    if (path === '/v1/updates/check') return this.updateCheck(JSON.parse(text) as UpdateCheckRequest);
    if (path === '/v1/updates/report') return { status: 204, body: undefined };
    if (path === '/v1/licenses/activate') return this.grant(body.license_key ?? '', body.device_fingerprint ?? '', 'activate');
    if (path !== '/v1/licenses/refresh') return error(404, 'NOT_FOUND', 'no such route');
    if (body.token === undefined) return this.grant(body.license_key ?? '', body.device_fingerprint ?? '', 'refresh');
    let presented: { sub: string; device: string };
    try {
      presented = verifyJws<{ sub: string; device: string }>(body.token, this.publicKeys, DOCUMENT_TYPES.runtimeToken).claims;
    } catch {
      return error(401, 'INVALID_RUNTIME_TOKEN', 'not a token this authority signed');
    }
    const key = [...this.licenses].find(([, l]) => l.id === presented.sub)?.[0] ?? '';
    return this.grant(key, presented.device, 'refresh');
  }

  private updateCheck(body: UpdateCheckRequest): Reply {
    const license = this.licenses.get(body.license_key);
    if (!license || license.status !== 'ACTIVE') return error(401, 'INVALID_LICENSE_KEY', 'invalid license key');
    if (!this.push) return { status: 204, body: undefined };
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    const claims: UpdateManifestClaims = {
      iss: 'latchkey',
      sub: license.id,
      // The SDK sends both; the real authority would read them from the records.
      app_id: body.app_id ?? '',
      platform: body.platform ?? '',
      device: body.device_fingerprint,
      ...this.push,
      iat,
      exp: iat + MANIFEST_LIFETIME_SECONDS,
    };
    return { status: 200, body: { manifest: this.manifestSigner.signManifest(this.mutateManifest ? this.mutateManifest(claims) : claims) } };
  }

  /** The update reports received, oldest first. */
  get updateReports(): Record<string, unknown>[] {
    return this.requests.filter((r) => r.path === '/v1/updates/report').map((r) => JSON.parse(r.body) as Record<string, unknown>);
  }

  private grant(key: string, device: string, operation: 'activate' | 'refresh'): Reply {
    const license = this.licenses.get(key);
    if (!license || license.status === 'REVOKED') return error(401, 'INVALID_LICENSE_KEY', 'invalid license key');
    if (license.status === 'EXPIRED') return error(403, 'LICENSE_EXPIRED', 'license expired');
    if (!license.devices.has(device)) {
      if (operation === 'refresh') return error(403, 'DEVICE_NOT_ACTIVATED', 'device not activated');
      if (license.devices.size >= license.deviceLimit) return error(403, 'DEVICE_LIMIT_EXCEEDED', 'device limit');
    }
    license.devices.add(device);
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    let claims = runtimeClaims({ iat, sub: license.id, app_id: this.appId, device });
    if (this.mutateClaims) claims = this.mutateClaims(claims);
    const token = this.signer.sign(claims);
    this.issuedTokens.push(token);
    return { status: 200, body: { token, expires_at: new Date(claims.exp * 1000).toISOString(), policy: claims.policy } };
  }
}

export function error(status: number, errorCode: string, detail: string, headers?: Record<string, string>): Reply {
  return { status, body: { detail, error_code: errorCode, status_code: status }, ...(headers ? { headers } : {}) };
}
