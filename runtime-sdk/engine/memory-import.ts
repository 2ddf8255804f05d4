/**
 * Runs a decrypted ES module from memory: imported from a `data:` URL, so no byte of it touches the
 * disk. Through a `vm.Script` using the main context's loader, because a single executable runs its
 * script as CommonJS without a dynamic-import callback (a plain `import()` there fails); the module
 * itself is full ESM, top-level await included. It may import Node's built-in modules only, which
 * is what protection leaves outside the app's bundle.
 */
import vm from 'node:vm';

/** Node flags the loader option experimental; the app's users should not see that on every start. */
const LOADER_WARNING = 'USE_MAIN_CONTEXT_DEFAULT_LOADER';

export function importFromMemory(source: Buffer): Promise<unknown> {
  const url = `data:text/javascript;base64,${source.toString('base64')}`;
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (!String(warning).includes(LOADER_WARNING)) (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    const script = new vm.Script(`import(${JSON.stringify(url)})`, { importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
    return script.runInThisContext() as Promise<unknown>;
  } finally {
    process.emitWarning = emitWarning;
  }
}
