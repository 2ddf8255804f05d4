import path from 'node:path';
import * as esbuild from 'esbuild';

/**
 * Bundles a script that uses the SDK with esbuild as an app would ship it (lazy imports become
 * chunks, the native addon stays a package), so fresh processes measure Node, not the TypeScript
 * loader. Returns the entry's output file (`.mjs`, an ES module wherever it is written).
 */
export async function bundleSdkScript(entry: string, outdir: string): Promise<string> {
  await esbuild.build({
    entryPoints: [entry],
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['sodium-native'],
    // CommonJS dependencies (systeminformation) require Node built-ins.
    banner: { js: "import { createRequire as __sdkRequire } from 'node:module'; const require = __sdkRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return path.join(outdir, `${path.basename(entry, path.extname(entry))}.mjs`);
}
