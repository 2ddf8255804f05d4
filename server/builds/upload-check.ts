import { RequestError } from '../errors.js';
import { appRootOf } from './protection/javascript-app.js';
import { ArchiveLinkRefusal } from './scanning/archive-links.js';
import { archiveKindOf, ArtifactUnpacker } from './scanning/archive.js';
import { ScanRefusal } from './scanning/findings.js';

/** How many native addons a refusal names before "and N more". */
const NAMED_ADDONS = 5;

/**
 * What an upload is refused for at once (422 PACKAGE_REJECTED), before a build is made, rather
 * than by the build's job later: an archive with a symbolic link that leads out of it, and a
 * JavaScript app carrying native addons (`.node` files), which protection cannot load yet and
 * would otherwise make a READY build that crashes. It lists the archive without writing it; other
 * problems (bombs, unreadable archives, malware) stay the job's to report on the build as before.
 */
export async function checkUpload(file: string, opts: { protectsApps: boolean; entry: string | undefined }): Promise<void> {
  const kind = await archiveKindOf(file);
  if (!kind) return;
  let files: string[];
  try {
    ({ files } = await (await ArtifactUnpacker.of(file)).list(file, kind));
  } catch (err) {
    if (err instanceof ArchiveLinkRefusal) throw new RequestError('PACKAGE_REJECTED', `The archive was refused: ${err.finding.reason}`);
    if (err instanceof ScanRefusal) return;
    throw err;
  }
  const isApp = appRootOf(files) !== null || opts.entry !== undefined;
  if (!opts.protectsApps || !isApp) return;
  const addons = files.filter((f) => f.toLowerCase().endsWith('.node'));
  if (addons.length === 0) return;
  const named = addons
    .slice(0, NAMED_ADDONS)
    .map((f) => JSON.stringify(f))
    .join(', ');
  const more = addons.length > NAMED_ADDONS ? ` and ${addons.length - NAMED_ADDONS} more` : '';
  throw new RequestError(
    'PACKAGE_REJECTED',
    `The app carries native addons (${named}${more}): native addons cannot be protected yet; remove them (or the dependencies that build them), ` +
      "or set the app's protection_level to none to deliver the upload as it is",
  );
}
