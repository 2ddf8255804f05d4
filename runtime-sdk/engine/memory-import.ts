/**
 * Runs a decrypted ES module from memory, top-level await included, without a byte of it touching
 * the disk. It may import Node's built-in modules only, which is what protection leaves outside
 * the app's bundle.
 *
 * Where Node has synchronous module hooks (22.15 and later: every executable protection makes),
 * the source is handed to the loader under a URL of its own. Elsewhere (a bundle on an older Node)
 * it is imported from a `data:` URL, which costs a parse of the whole base64 URL. Either way the
 * import goes through a `vm.Script` using the main context's loader, because a single executable
 * runs its script as CommonJS without a dynamic-import callback (a plain `import()` there fails).
 */
import nodeModule from 'node:module';
import vm from 'node:vm';

/** Node flags the loader option experimental; the app's users should not see that on every start. */
const LOADER_WARNING = 'USE_MAIN_CONTEXT_DEFAULT_LOADER';
const APP_URL = 'latchkey:app.mjs';
const SPECIFIER_KEY = Symbol.for('latchkey.appSpecifier');

type RegisterHooks = (hooks: {
  resolve(specifier: string, context: unknown, next: (specifier: string, context: unknown) => unknown): unknown;
  load(url: string, context: unknown, next: (url: string, context: unknown) => unknown): unknown;
}) => unknown;

function specifierFor(source: Buffer): string {
  const registerHooks = (nodeModule as unknown as { registerHooks?: RegisterHooks }).registerHooks;
  if (!registerHooks) return `data:text/javascript;base64,${source.toString('base64')}`;
  registerHooks({
    resolve: (specifier, context, next) => (specifier === APP_URL ? { url: APP_URL, format: 'module', shortCircuit: true } : next(specifier, context)),
    load: (url, context, next) => (url === APP_URL ? { format: 'module', source, shortCircuit: true } : next(url, context)),
  });
  return APP_URL;
}

export function importFromMemory(source: Buffer): Promise<unknown> {
  (globalThis as Record<symbol, unknown>)[SPECIFIER_KEY] = specifierFor(source);
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (!String(warning).includes(LOADER_WARNING)) (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    const script = new vm.Script(`import(globalThis[Symbol.for(${JSON.stringify(SPECIFIER_KEY.description)})])`, {
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    return script.runInThisContext() as Promise<unknown>;
  } finally {
    process.emitWarning = emitWarning;
    delete (globalThis as Record<symbol, unknown>)[SPECIFIER_KEY];
  }
}
