/**
 * What the packed SDK costs an app: the cold `import` of `@latchkey/runtime-sdk` in plain Node
 * (fresh processes, the package installed from its `npm pack` tarball), against importing the two
 * Node built-ins any licensing client needs; and the size of an esbuild bundle of an app that only
 * calls `check()`, with what fills it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { freshProject, packWorkspace, runProgram } from '../packaging/support.js';
import { defineBench } from './lib.js';
import { sampleSummary } from './samples.js';

const BENCH = 'sdk-package';
const SAMPLES = Number(process.env.BENCH_SDK_PROCESSES ?? 20);
const IMPORT_GOAL_MS = 60;
const BUNDLE_GOAL_KB = 400;

/** Prints how long the dynamic import of its argument took, in ms: Node's own start is not counted. */
const IMPORT_TIMER = `const started = performance.now(); await import(process.argv[2]); process.stdout.write(String(performance.now() - started));`;
const BUILTINS = `import 'node:https'; import 'node:crypto';`;
const CHECK_ONLY_APP = `import { createLicenseClient } from '@latchkey/runtime-sdk';
const license = await createLicenseClient({ appId: 'app_x', serverUrl: 'https://licensing.example.com', publicKeys: JSON.parse(process.env.KEYS), fingerprintSalt: 's', appVersion: '1.0.0' });
console.log((await license.check()).state);
`;

/** Bytes in the bundle per package (the SDK itself and the app as `sdk/app`), largest first. */
function bytesByPackage(meta: esbuild.Metafile, output: string): [string, number][] {
  const byPackage = new Map<string, number>();
  for (const [file, input] of Object.entries(meta.outputs[output]!.inputs)) {
    const inside = file.split('node_modules/').pop()!;
    const name =
      file.includes('node_modules/') && !inside.startsWith('@latchkey/')
        ? inside
            .split('/')
            .slice(0, inside.startsWith('@') ? 2 : 1)
            .join('/')
        : 'sdk/app';
    byPackage.set(name, (byPackage.get(name) ?? 0) + input.bytesInOutput);
  }
  return [...byPackage].sort((a, b) => b[1] - a[1]);
}

export default defineBench({
  title: 'runtime SDK package: cold import in plain Node (vs node:https + node:crypto), size of a check()-only bundle',
  async run(ctx) {
    const progress = (message: string) => process.stderr.write(`  ${BENCH}: ${message}\n`);
    progress('npm pack and install into a fresh project');
    const packs = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-bench-packs-'));
    const project = await freshProject('sdk-bench', [await packWorkspace('runtime-sdk', packs)], { type: 'module' });
    fs.writeFileSync(path.join(project, 'import-timer.mjs'), IMPORT_TIMER);
    fs.writeFileSync(path.join(project, 'builtins.mjs'), BUILTINS);
    fs.writeFileSync(path.join(project, 'check-only.mjs'), CHECK_ONLY_APP);
    try {
      progress(`${SAMPLES} fresh processes each, alternating`);
      const sdk: number[] = [];
      const builtins: number[] = [];
      const importIn = async (specifier: string) => Number((await runProgram(process.execPath, ['import-timer.mjs', specifier], { cwd: project })).stdout);
      for (let i = 0; i < SAMPLES; i++) {
        sdk.push(await importIn('@latchkey/runtime-sdk'));
        builtins.push(await importIn('./builtins.mjs'));
      }
      if ([...sdk, ...builtins].some((ms) => !Number.isFinite(ms) || ms <= 0)) throw new Error('an import did not report its time');
      const [sdkRow, builtinsRow] = [
        sampleSummary(BENCH, 'cold import, fresh process', '@latchkey/runtime-sdk', sdk),
        sampleSummary(BENCH, 'cold import, fresh process', 'node:https + node:crypto', builtins),
      ];
      ctx.record([sdkRow, builtinsRow]);
      ctx.expect({
        name: 'median cold import of the SDK',
        wanted: `< ${IMPORT_GOAL_MS} ms`,
        measured: `${sdkRow.p50Ms.toFixed(1)} ms (built-ins ${builtinsRow.p50Ms.toFixed(1)} ms, ratio ${(sdkRow.p50Ms / builtinsRow.p50Ms).toFixed(2)})`,
        met: sdkRow.p50Ms < IMPORT_GOAL_MS,
      });

      progress('esbuild bundle of an app that only calls check()');
      const outfile = path.join(project, 'bundle.mjs');
      const result = await esbuild.build({
        absWorkingDir: project,
        entryPoints: ['check-only.mjs'],
        bundle: true,
        platform: 'node',
        format: 'esm',
        minify: true,
        outfile,
        metafile: true,
        logLevel: 'silent',
      });
      const kb = fs.statSync(outfile).size / 1024;
      const largest = bytesByPackage(result.metafile, 'bundle.mjs')
        .slice(0, 4)
        .map(([name, bytes]) => `${name} ${(bytes / 1024).toFixed(0)} KB`)
        .join(', ');
      ctx.expect({ name: 'check()-only app bundle, minified', wanted: `< ${BUNDLE_GOAL_KB} KB`, measured: `${kb.toFixed(0)} KB (${largest})`, met: kb < BUNDLE_GOAL_KB });
    } finally {
      fs.rmSync(project, { recursive: true, force: true });
      fs.rmSync(packs, { recursive: true, force: true });
    }
  },
});
