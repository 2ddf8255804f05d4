import { z } from 'zod';

/** The per-platform download list of every delivery answer (redeem, marketplace provisioning, checkout entitlement). */
export const PlatformDownloads = z
  .array(
    z.object({
      platform: z.string().describe("One of the app's platforms (`win-x64`, `linux-x64`, `mac-arm64`, ...)"),
      build_platform: z.string().describe("The build's own platform: `platform`, or `cross_platform` when that platform has no build of its own"),
      build_id: z.string().describe('The build that platform gets: its own newest READY build, else the newest `cross_platform` one'),
      version: z.string().nullable(),
      package_name: z.string().describe('The file name the download is saved under'),
      download_url: z.string().describe('Signed link to the build, valid 7 days'),
      download_expires_at: z.iso.datetime(),
    }),
  )
  .describe(
    "One download per platform the app ships, in the app's platform order (a released build only under `released_only`); empty while no build is READY. " +
      "The single `download_url` is the newest of them, as before; a client that knows the customer's platform picks its entry here.",
  );
