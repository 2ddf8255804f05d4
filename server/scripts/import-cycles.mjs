// Fails when the server's modules import each other in a circle (type-only imports included: a
// circle of types still ties two modules' designs together). Run by `npm run check`.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, URL } from 'node:url';

const root = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SKIPPED = new Set(['node_modules', 'dist', 'assets']);

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : sources(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]|\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g;

const files = sources(root);
const known = new Set(files);
const edges = new Map(
  files.map((file) => {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(SPECIFIER)].map((m) => path.resolve(path.dirname(file), (m[1] ?? m[2]).replace(/\.js$/, '.ts'))).filter((target) => known.has(target));
    return [file, targets];
  }),
);

// Depth-first search; a module met again while still on the path closes a circle.
const cycles = [];
const state = new Map();
function visit(file, trail) {
  state.set(file, 'open');
  for (const target of edges.get(file)) {
    if (state.get(target) === 'open') cycles.push([...trail.slice(trail.indexOf(target)), target]);
    else if (!state.has(target)) visit(target, [...trail, target]);
  }
  state.set(file, 'done');
}
for (const file of files) if (!state.has(file)) visit(file, [file]);

if (cycles.length > 0) {
  for (const cycle of cycles) console.error(`import circle: ${cycle.map((f) => path.relative(root, f)).join(' -> ')}`);
  process.exit(1);
}
