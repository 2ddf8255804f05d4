#!/usr/bin/env node
// The CLI is TypeScript run through tsx, as the server is; this shim lets `npx latchkey` and the
// package's `bin` entry start it without a build step.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
