/**
 * Optional dependencies that an app may not carry: sodium-native (a native addon, for secure
 * memory). They are imported at run time under a name a bundler cannot follow, so an app bundled
 * with esbuild or webpack builds without them and the SDK runs on with its fallback, saying why;
 * an app that ships the module in its node_modules (or beside its bundle) gets it.
 */
export type OptionalModule<T> = { module: T; reason?: undefined } | { module?: undefined; reason: string };

/**
 * Imports `name`, resolved from where this code runs (the SDK's own folder, or the app's bundle).
 * The specifier is a parameter, not a literal: esbuild leaves such an import alone, and webpack is
 * told to by its magic comment.
 */
export async function importOptional<T>(name: string): Promise<OptionalModule<T>> {
  try {
    const loaded = (await import(/* webpackIgnore: true */ name)) as { default?: T } & T;
    return { module: loaded.default ?? loaded };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
    return { reason: missing ? `${name} is not installed beside the app` : `${name} did not load: ${(err as Error).message}` };
  }
}
