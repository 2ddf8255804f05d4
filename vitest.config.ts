import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export default defineConfig({
  resolve: {
    // The server's code under test imports the workspaces' sources, as type-checking does
    // (tsconfig.json `paths`); what users install is tested from packed tarballs (test/packaging).
    alias: [
      { find: /^@latchkey\/runtime-sdk$/, replacement: source('./runtime-sdk/index.ts') },
      { find: /^@latchkey\/runtime-sdk\/protocol$/, replacement: source('./runtime-sdk/protocol.ts') },
      { find: /^@latchkey\/runtime-sdk\/updates$/, replacement: source('./runtime-sdk/updates/index.ts') },
      { find: /^@latchkey\/runtime-sdk\/engine$/, replacement: source('./runtime-sdk/engine/index.ts') },
      { find: /^@latchkey\/runtime-sdk\/engine\/integrity$/, replacement: source('./runtime-sdk/engine/integrity.ts') },
      { find: /^@latchkey\/native\/sea$/, replacement: source('./native/sea/single-executable.ts') },
      { find: /^@latchkey\/native\/runtimes$/, replacement: source('./native/runtimes/node-runtimes.ts') },
      { find: /^@latchkey\/native\/deliverable$/, replacement: source('./native/deliverable/index.ts') },
    ],
  },
  test: {
    // Black-box suites under test/; unit tests of pure rules beside the code they test.
    include: ['test/**/*.test.ts', '{server,runtime-sdk,cli,native}/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default on a 2-core machine is one file at a time (cores - 1), but most files wait on
    // a server, PostgreSQL or a child process rather than compute, and each has its own database:
    // the whole suite took about 18 minutes one at a time and 11 three at a time on a loaded
    // machine. Two keeps CI well within its 30 minutes with less contention than three.
    maxWorkers: 2,
  },
});
