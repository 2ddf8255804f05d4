import type { Knex } from 'knex';
import { PLATFORMS } from '../apps/schemas.js';
import { hotQuery } from '../db/knex.js';

/**
 * The one owner of "which build does this customer get": every delivery surface (checkout
 * fulfilment, the hosted delivery page, marketplace provisioning, code redemption, the delivery
 * email, the entitlement webhook's permanent page) reads the newest deliverable build of each
 * platform with `newestDeliverableBuilds` and picks from it with the pure rules below.
 */

/** A READY build a buyer may download, with what sending its package needs. */
export interface DeliverableBuild {
  id: string;
  platform: string;
  version: string | null;
  package_key: string;
  package_name: string;
  protected_size_bytes: number;
  sha256: string;
  completed_at: Date;
}

/** The build one of the app's platforms gets. */
export interface PlatformOffer {
  /** One of the app's platforms (its build may be a `cross_platform` one). */
  platform: string;
  build: DeliverableBuild;
}

const SINGLE_OS = new Set<string>(PLATFORMS);

const PLATFORM_NAMES: Record<string, string> = {
  'win-x64': 'Windows (x64)',
  'win-arm64': 'Windows (ARM64)',
  'linux-x64': 'Linux (x64)',
  'linux-arm64': 'Linux (ARM64)',
  'mac-x64': 'macOS (Intel)',
  'mac-arm64': 'macOS (Apple silicon)',
};

/** How pages and emails name a platform to a buyer. */
export const platformName = (platform: string) => PLATFORM_NAMES[platform] ?? platform;

const newestFirst = (a: DeliverableBuild, b: DeliverableBuild) => b.completed_at.getTime() - a.completed_at.getTime();

/**
 * One offer per platform the app ships (an app has at least one): that platform's newest build,
 * else the newest build for every OS. `newest` is the newest build of each platform
 * (`newestDeliverableBuilds`).
 */
export function offerPerPlatform(platforms: readonly string[], newest: readonly DeliverableBuild[]): PlatformOffer[] {
  const everyOs = newest.filter((b) => !SINGLE_OS.has(b.platform)).sort(newestFirst)[0];
  const offers: PlatformOffer[] = [];
  for (const platform of platforms) {
    const build = newest.find((b) => b.platform === platform) ?? everyOs;
    if (build) offers.push({ platform, build });
  }
  return offers;
}

/**
 * The newest build among the offers: what the single-link fields (`download_url`, `app_version`)
 * named before there was one link per platform, kept so that existing clients read the same.
 */
export function newestOffer(offers: readonly PlatformOffer[]): PlatformOffer | undefined {
  return [...offers].sort((a, b) => newestFirst(a.build, b.build))[0];
}

export type VisitorOs = 'win' | 'mac' | 'linux';

/** A visitor's platform as far as the User-Agent tells it: `arch` undefined when it does not say. */
export interface VisitorPlatform {
  os: VisitorOs;
  arch: 'x64' | 'arm64' | undefined;
}

/**
 * The desktop OS (and architecture where the browser says it) of a User-Agent; undefined for a
 * phone, a tablet, ChromeOS or anything unrecognised. Browsers on Apple silicon still send
 * "Intel Mac OS X", so a Mac's architecture is never read from it.
 */
export function visitorPlatform(userAgent: string | undefined): VisitorPlatform | undefined {
  if (!userAgent) return undefined;
  const ua = userAgent.toLowerCase();
  if (/android|iphone|ipad|ipod|cros/.test(ua)) return undefined;
  const arch = /\b(arm64|aarch64)\b/.test(ua) ? 'arm64' : /\b(win64|wow64|x64|x86_64|amd64)\b/.test(ua) ? 'x64' : undefined;
  if (ua.includes('windows')) return { os: 'win', arch };
  if (ua.includes('macintosh') || ua.includes('mac os x')) return { os: 'mac', arch: undefined };
  if (ua.includes('linux') || ua.includes('x11')) return { os: 'linux', arch };
  return undefined;
}

/**
 * How well an offer fits the visitor: its own OS and architecture best; its OS on the other
 * architecture next (arm64 Windows and Macs run x64 programs; for a Mac, whose browser hides the
 * architecture, Apple silicon first as every Mac sold since 2020 has it); a build for every OS
 * after that; another OS last.
 */
function fit(offer: VisitorChoice, visitor: VisitorPlatform): number {
  const [os, arch] = offer.platform.split('-');
  if (os !== visitor.os) return SINGLE_OS.has(offer.build_platform) ? 0 : 1;
  const wanted = visitor.arch ?? (visitor.os === 'mac' ? 'arm64' : 'x64');
  return arch === wanted ? 3 : 2;
}

/** A download offered to a visitor: the app's platform it is for, and its build's own platform. */
export interface VisitorChoice {
  platform: string;
  build_platform: string;
}

/**
 * The downloads for a visitor: the one that fits their User-Agent best first (`mine`, undefined
 * when the UA tells no desktop OS or none fits), the rest in the app's order under "other platforms".
 */
export function offersForVisitor<T extends VisitorChoice>(offers: readonly T[], userAgent: string | undefined): { mine: T | undefined; others: T[] } {
  const visitor = visitorPlatform(userAgent);
  if (!visitor) return { mine: undefined, others: [...offers] };
  let mine: T | undefined;
  for (const offer of offers) if (fit(offer, visitor) > 0 && (!mine || fit(offer, visitor) > fit(mine, visitor))) mine = offer;
  return { mine, others: offers.filter((o) => o !== mine) };
}

/** The newest deliverable build of each platform: `app` and `releasedOnly` are the SQL of the app's id and of whether only released builds count. */
const newestDeliverableBuildsSql = (app: string, releasedOnly: string) => `
  SELECT DISTINCT ON (platform) id, platform, version, package_key, package_name, protected_size_bytes, sha256, completed_at
  FROM builds WHERE app_id = ${app} AND status = 'READY' AND (released OR NOT ${releasedOnly})
  ORDER BY platform, completed_at DESC, created_at DESC`;

/** $1 app, $2 released builds only (`released_only`). */
const NEWEST_DELIVERABLE_BUILDS = newestDeliverableBuildsSql('$1', '$2::boolean');

/**
 * The same builds as a json array, for a statement that reads its sale's app with them (checkout
 * fulfilment and code redemption: one round trip); `appId` and `deliveryMode` are the SQL of the
 * app's id and delivery mode. Read it back with `deliverableBuildsFromJson`.
 */
export const newestDeliverableBuildsJsonSql = (appId: string, deliveryMode: string) =>
  `(SELECT COALESCE(json_agg(b), '[]'::json) FROM (${newestDeliverableBuildsSql(appId, `(${deliveryMode} = 'released_only')`)}) b)`;

export type DeliverableBuildJson = Omit<DeliverableBuild, 'completed_at'> & { completed_at: string };

export const deliverableBuildsFromJson = (builds: readonly DeliverableBuildJson[]): DeliverableBuild[] => builds.map((b) => ({ ...b, completed_at: new Date(b.completed_at) }));

/**
 * The newest deliverable READY build of each platform the app's builds have (released ones only
 * under `released_only`), in the caller's transaction so that what is sold and what is offered
 * come from one snapshot. A prepared statement (db/knex.ts hotQuery): every sale and webhook grant
 * runs it, and knex's per-query machinery cost as much CPU as the query there.
 */
export function newestDeliverableBuilds(q: Knex, app: { id: string; delivery_mode: string }): Promise<DeliverableBuild[]> {
  return hotQuery<DeliverableBuild>(q, NEWEST_DELIVERABLE_BUILDS, [app.id, app.delivery_mode === 'released_only'], 'delivery.newest_deliverable_builds');
}

/** What a sold app's delivery reads: its platforms and delivery mode. */
export interface DeliveredApp {
  id: string;
  delivery_mode: string;
  platforms: string[];
}

/** The offer of each platform the app ships, read in `q` (the channel's transaction). */
export async function deliverableOffers(q: Knex, app: DeliveredApp): Promise<PlatformOffer[]> {
  return offerPerPlatform(app.platforms, await newestDeliverableBuilds(q, app));
}
