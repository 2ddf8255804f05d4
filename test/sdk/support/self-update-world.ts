/**
 * Real processes of a small app that updates itself (self-updating-app.ts): its v1 and v2 sources,
 * and a launch of one as a customer starts it, its output collected and its exit awaited.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SelfUpdateConfig } from './self-updating-app.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const RUNNER = path.join(REPO_ROOT, 'test/sdk/support/self-updating-app.ts');

export const appSource = (version: string, buildId: string) =>
  `import { runVersion } from ${JSON.stringify(RUNNER)};\nawait runVersion(${JSON.stringify(version)}, ${JSON.stringify(buildId)});\n`;

export interface AppRun {
  /** Null when ended by a signal. */
  code: number | null;
  /** stdout and stderr, as they came. */
  output: string;
}

/** Runs `appFile` with node (as v1 of a bundle is run) and resolves once it and all it left on its stdio are done. */
export function runApp(appFile: string, args: string[], config: SelfUpdateConfig, stdin?: string): Promise<AppRun> {
  const app = spawn(process.execPath, ['--import', 'tsx', appFile, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LATCHKEY_SELF_UPDATE: JSON.stringify(config) },
    stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let output = '';
  app.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  app.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  if (stdin !== undefined) app.stdin!.end(stdin);
  // 'close': the process exited and its stdio, which a version run in its place shares, is closed.
  return new Promise((resolve) => app.once('close', (code) => resolve({ code, output })));
}
