/** Binds a build's sealed content key to the build: a sealed key copied onto another build does not open. */
export const contentKeyAad = (buildId: string) => `build-content-key:${buildId}`;
