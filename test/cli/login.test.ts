import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDeveloper, type TestDeveloper } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { runLatchkey } from '../support/cli.js';
import { closeNow, listenOnLoopback } from '../support/local-http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let dev: TestDeveloper;
let home: string;
beforeAll(async () => {
  server = await startTestServer();
  dev = await registerDeveloper(client(server.url));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-cli-login-'));
});
afterAll(async () => {
  await server.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const WRONG_KEY = 'lk_000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

/** The command as a developer runs it after `login`: nothing in the environment names server or key. */
const signedIn = (configDir: string, args: string[], env: Record<string, string> = {}, input?: string) =>
  runLatchkey('', '', args, { LATCHKEY_CONFIG_DIR: configDir, ...env }, { input });

const freshDir = (name: string) => path.join(home, name, 'latchkey');
const mode = (file: string) => fs.statSync(file).mode & 0o777;

// Each case starts the real executable a few times: generous time, no timing asserted.
describe('latchkey login and logout', { timeout: 120_000 }, () => {
  it('checks the key, saves server and key readable by the user alone, and later commands use them', async () => {
    const dir = freshDir('saved');
    const login = await signedIn(dir, ['login', '--url', `${server.url}/`, '--api-key', dev.apiKey]);
    expect(login.code, login.stderr).toBe(0);
    const file = path.join(dir, 'config.json');
    expect(login.stdout).toBe(`Signed in to ${server.url} as ${dev.email} (free plan); saved to ${file}\n`);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ url: server.url, api_key: dev.apiKey });
    expect(mode(file)).toBe(0o600);
    expect(mode(dir)).toBe(0o700);
    expect(fs.readdirSync(dir)).toEqual(['config.json']);

    const apps = await signedIn(dir, ['apps', 'list']);
    expect(apps).toMatchObject({ code: 0, stdout: expect.stringContaining('0 of 0 app(s)') });

    const logout = await signedIn(dir, ['logout']);
    expect(logout).toMatchObject({ code: 0, stdout: `Signed out: removed ${file}\n` });
    expect(fs.existsSync(file)).toBe(false);
    const after = await signedIn(dir, ['apps', 'list']);
    expect(after.code).toBe(3);
    expect(after.stderr).toBe('latchkey: not signed in: run `latchkey login --url <server>` or set LATCHKEY_API_KEY (create a key in the portal)\n');
    expect(await signedIn(dir, ['logout', '--json'])).toMatchObject({ code: 0, stdout: `${JSON.stringify({ config_file: file, removed: false }, null, 2)}\n` });
  });

  it('reads the key from stdin, and answers JSON with --json', async () => {
    const dir = freshDir('stdin');
    const login = await signedIn(dir, ['login', '--url', server.url, '--json'], {}, `${dev.apiKey}\n`);
    expect(login.code, login.stderr).toBe(0);
    expect(JSON.parse(login.stdout)).toMatchObject({ url: server.url, config_file: path.join(dir, 'config.json'), developer: { id: dev.id, email: dev.email, plan: 'free' } });
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).api_key).toBe(dev.apiKey);
  });

  it('refuses a wrong key with exit 3 and saves nothing, not even over an earlier login', async () => {
    const dir = freshDir('wrong');
    const wrong = await signedIn(dir, ['login', '--url', server.url, '--api-key', WRONG_KEY]);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toBe(`latchkey: ${server.url} refused this API key, nothing was saved: use a current key (rotating a key ends the previous one)\n`);
    expect(fs.existsSync(dir)).toBe(false);

    expect((await signedIn(dir, ['login', '--url', server.url, '--api-key', dev.apiKey])).code).toBe(0);
    expect((await signedIn(dir, ['login', '--url', server.url], {}, WRONG_KEY)).code).toBe(3);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).api_key).toBe(dev.apiKey);
  });

  it('says what is missing: the server, the key; an unreachable server is exit 6', async () => {
    const dir = freshDir('missing');
    expect(await signedIn(dir, ['login', '--api-key', dev.apiKey])).toMatchObject({
      code: 2,
      stderr: 'latchkey: name the server: latchkey login --url https://licenses.example.com\n',
    });
    expect(await signedIn(dir, ['login', '--url', server.url])).toMatchObject({
      code: 2,
      stderr: 'latchkey: no API key given: pass --api-key, pipe it on stdin, or run on a terminal to be asked\n',
    });
    expect((await signedIn(dir, ['login', '--url', 'licenses.example.com', '--api-key', dev.apiKey])).code).toBe(2);
    const down = await signedIn(dir, ['login', '--url', 'http://127.0.0.1:1', '--api-key', dev.apiKey]);
    expect(down.code).toBe(6);
    expect(down.stderr).toContain('cannot reach http://127.0.0.1:1');
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('lets LATCHKEY_API_KEY and LATCHKEY_URL win over the saved login, and says so', async () => {
    const dir = freshDir('override');
    const login = await signedIn(dir, ['login', '--url', server.url, '--api-key', dev.apiKey], { LATCHKEY_API_KEY: WRONG_KEY });
    expect(login.code).toBe(0);
    expect(login.stderr).toBe('note: LATCHKEY_API_KEY is set in this environment and wins over the saved login\n');

    const wrongKey = await signedIn(dir, ['apps', 'list'], { LATCHKEY_API_KEY: WRONG_KEY });
    expect(wrongKey.code).toBe(3);
    expect(wrongKey.stderr).toContain('The access token or API key is invalid or expired (UNAUTHORIZED)');
    const elsewhere = await signedIn(dir, ['apps', 'list'], { LATCHKEY_URL: 'http://127.0.0.1:1' });
    expect(elsewhere.code).toBe(6);
    expect((await signedIn(dir, ['apps', 'list'])).code).toBe(0);
  });

  it('never sends the key on to where a redirect points: an address answering 302 is refused with exit 2', async () => {
    const keysSeen: unknown[] = [];
    const elsewhere = http.createServer((req, res) => {
      keysSeen.push(req.headers['x-api-key']);
      res.end('{}');
    });
    const elsewhereUrl = await listenOnLoopback(elsewhere);
    const redirecting = http.createServer((req, res) => res.writeHead(302, { location: `${elsewhereUrl}${req.url}` }).end());
    const redirectingUrl = await listenOnLoopback(redirecting);
    try {
      const dir = freshDir('redirect');
      const login = await signedIn(dir, ['login', '--url', redirectingUrl, '--api-key', dev.apiKey]);
      expect(login.code).toBe(2);
      expect(login.stderr).toContain(`redirects to ${elsewhereUrl}/v1/auth/me: the API key is not sent on`);
      expect(fs.existsSync(path.join(dir, 'config.json'))).toBe(false);
      // Nor any other command, with the key in the environment.
      expect((await runLatchkey(redirectingUrl, dev.apiKey, ['apps', 'list'])).code).toBe(2);
      expect(keysSeen).toEqual([]);
    } finally {
      await Promise.all([closeNow(elsewhere), closeNow(redirecting)]);
    }
  });

  it('says an address answering a page that is not the API (an HTML 404) may be the wrong one', async () => {
    const site = http.createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>'));
    const siteUrl = await listenOnLoopback(site);
    try {
      const login = await signedIn(freshDir('not-the-api'), ['login', '--url', siteUrl, '--api-key', dev.apiKey]);
      expect(login.code).toBe(1);
      expect(login.stderr).toContain(`${siteUrl} answered HTTP 404 with a body that is not JSON: is that the Latchkey API's address?`);
    } finally {
      await closeNow(site);
    }
  });

  it('sends the key over plain http only to this machine, unless the user says the network between is private', async () => {
    // An address the rule does not take for this machine (IPv4-mapped IPv6) that still reaches the test server.
    const port = new URL(server.url).port;
    const remote = `http://[::ffff:127.0.0.1]:${port}`;
    const dir = freshDir('plain-http');
    const refused = await signedIn(dir, ['login', '--url', remote, '--api-key', dev.apiKey]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to send the API key over plain http:\/\/ to \[::ffff:7f00:1\].*--allow-http/);
    expect(fs.existsSync(path.join(dir, 'config.json'))).toBe(false);

    const allowed = await signedIn(dir, ['login', '--url', remote, '--api-key', dev.apiKey, '--allow-http']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'))).toEqual({ url: remote, api_key: dev.apiKey, allow_http: true });
    expect(await signedIn(dir, ['apps', 'list'])).toMatchObject({ code: 0 });
    // The saved choice holds for the saved server only; the environment can say so for one run.
    expect(await signedIn(dir, ['apps', 'list'], { LATCHKEY_URL: `http://[::ffff:127.0.0.2]:${port}` })).toMatchObject({ code: 2 });
    const unsaved = await runLatchkey(remote, dev.apiKey, ['apps', 'list']);
    expect(unsaved.code).toBe(2);
    expect(unsaved.stderr).toContain(`set LATCHKEY_ALLOW_HTTP=1, or sign in again with \`latchkey login --url ${remote} --allow-http\``);
    expect(await runLatchkey(remote, dev.apiKey, ['apps', 'list'], { LATCHKEY_ALLOW_HTTP: '1' })).toMatchObject({ code: 0 });
  });

  it('saves under XDG_CONFIG_HOME, else ~/.config, without LATCHKEY_CONFIG_DIR', async () => {
    const user = path.join(home, 'user');
    const defaults = { LATCHKEY_CONFIG_DIR: '', HOME: user };
    const xdg = await signedIn('', ['login', '--url', server.url, '--api-key', dev.apiKey], { ...defaults, XDG_CONFIG_HOME: path.join(user, 'xdg') });
    expect(xdg.code, xdg.stderr).toBe(0);
    expect(mode(path.join(user, 'xdg', 'latchkey', 'config.json'))).toBe(0o600);
    const dotConfig = await signedIn('', ['login', '--url', server.url, '--api-key', dev.apiKey], defaults);
    expect(dotConfig.code, dotConfig.stderr).toBe(0);
    expect(dotConfig.stdout).toContain(`saved to ${path.join(user, '.config', 'latchkey', 'config.json')}`);
    const help = await signedIn('', ['--help'], defaults);
    expect(help.stdout).toContain(path.join(user, '.config', 'latchkey', 'config.json'));
    expect(help.stdout).toContain('Exit codes:\n  0  success');
  });
});
