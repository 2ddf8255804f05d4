/**
 * One cold start in a fresh process, for `sdk-start.bench.ts`: the cache holds the license but not
 * the remembered fingerprint (a first start after an update of the cache format, or a lost OS id), so
 * `createLicenseClient()` probes the hardware before `check()` answers. Timed from after the imports
 * (module loading is `sdk-check`'s and `sdk-package`'s subject). Prints the milliseconds as JSON.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLicenseClient, type LicenseClientOptions } from '../../runtime-sdk/index.js';

const [optionsJson, templateFile] = process.argv.slice(2) as [string, string];
const options = JSON.parse(optionsJson) as LicenseClientOptions & { cacheDir: string };
const envelope = JSON.parse(fs.readFileSync(templateFile, 'utf8')) as Record<string, unknown>;
delete envelope.memo;
fs.writeFileSync(path.join(options.cacheDir, 'license.cache'), JSON.stringify(envelope), { mode: 0o600 });

const started = performance.now();
const license = await createLicenseClient(options);
const { state } = await license.check();
const ms = performance.now() - started;
await license.dispose();
process.stdout.write(`${JSON.stringify({ ms, state })}\n`);
