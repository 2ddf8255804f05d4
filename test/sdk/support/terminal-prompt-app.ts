/**
 * An app asked about an update with the default prompt and no desktop: the question goes to its
 * terminal. Once answered, it reads all of its own stdin and prints both as JSON, so a test sees
 * the answer came from the terminal and the app's input is whole.
 */
import { systemPrompt } from '../../../runtime-sdk/updates/index.js';
import { systemCommands } from '../../../runtime-sdk/updates/commands.js';

const prompt = systemPrompt({ os: 'linux', env: {}, commands: systemCommands({}, 'linux') });
const choice = await prompt.ask({ appName: 'Notes', currentVersion: '1.0.0', version: '2.0.0', buildId: 'bld_v2', releaseNotes: 'Faster sync.' });
let stdin = '';
for await (const chunk of process.stdin) stdin += String(chunk);
process.stdout.write(`${JSON.stringify({ choice, stdin })}\n`);
