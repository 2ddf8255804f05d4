/**
 * Version of the runtime engine that protection injects into apps: six parts, `1.0.0.0.0.N`.
 * Update pushes need N >= 178 (docs/contract.md, Versioning), so ours starts there; raise N with every
 * change to what a protected build runs at start.
 */
export const ENGINE_VERSION = '1.0.0.0.0.178';
