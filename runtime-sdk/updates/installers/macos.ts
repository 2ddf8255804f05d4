/**
 * macOS: an app is the whole `X.app` folder, and the package is a zip of it (`ditto -c -k
 * --keepParent`). It is unpacked next to the bundle with `ditto -x -k` (which keeps modes, symlinks
 * and extended attributes), then the running bundle is renamed `X.app.old.<timestamp>` (macOS allows
 * renaming a running app) and the new one takes its place. An app outside a bundle is one file, as on Linux.
 */
import path from 'node:path';
import { stageArchive, swapInProcess, type InstallStrategy, type RenameRules } from './steps.js';

const BUNDLE_RULES: RenameRules = { linkAside: false, retryCodes: [] };

export const appBundleStrategy: InstallStrategy = {
  staging: (target, stamp) => {
    const stagingRoot = `${target.replaced}.new.${stamp}`;
    return { stagingRoot, staged: path.join(stagingRoot, path.basename(target.replaced)) };
  },
  // By full path: PATH cannot substitute another program.
  stage: (plan, pkg, target, ctx) => stageArchive(plan, target, ctx, { file: '/usr/bin/ditto', args: ['-x', '-k', pkg.file, plan.stagingRoot] }),
  swap: (plan, target, ctx, journal) => swapInProcess(plan, target, ctx, journal, BUNDLE_RULES),
};
