import { Command } from 'commander';
import { apiError, reach } from './api-client.js';
import { assertSecretTransport, checkedUrl, serverUrl } from './config.js';
import { CliError, EXIT } from './errors.js';
import { withJson } from './options.js';
import { renderJson, renderTable } from './output.js';

type Env = Record<string, string | undefined>;
type Status = 'ok' | 'warn' | 'fail' | 'skipped';

export interface DoctorCheck {
  check: string;
  status: Status;
  detail: string;
}

/**
 * Clock skew the deployment tolerates: two-factor codes are 30-second steps (one step of drift is
 * accepted), so past 30 s sign-ins start failing; a few seconds already shift signed links' and
 * tokens' times and are worth fixing (NTP).
 */
const SKEW_WARN_MS = 5_000;
const SKEW_FAIL_MS = 30_000;

interface Diagnostics {
  server_time: string;
  public_base_url: string;
  database: { ok: boolean; detail: string };
  storage: { ok: boolean; detail: string };
  signing_keys: { ok: boolean; detail: string };
}

const verdict = (ok: boolean): Status => (ok ? 'ok' : 'fail');

async function reachable(url: string): Promise<DoctorCheck> {
  try {
    const res = await reach(`${url}/healthz`, { method: 'GET' });
    return { check: 'public URL', status: verdict(res.ok), detail: `${url}/healthz answered HTTP ${res.status}` };
  } catch (err) {
    return { check: 'public URL', status: 'fail', detail: (err as Error).message };
  }
}

/** Server time against this machine's, the round trip halved on each side (NTP's own estimate). */
function skewCheck(serverTime: string, sentAt: number, receivedAt: number): DoctorCheck {
  const skew = Date.parse(serverTime) - (sentAt + receivedAt) / 2;
  const seconds = (Math.abs(skew) / 1000).toFixed(1);
  const side = skew > 0 ? 'ahead of' : 'behind';
  const status: Status = Math.abs(skew) > SKEW_FAIL_MS ? 'fail' : Math.abs(skew) > SKEW_WARN_MS ? 'warn' : 'ok';
  return { check: 'clock', status, detail: `the server's clock is ${seconds} s ${side} this machine's${status === 'ok' ? '' : ': synchronise it (NTP)'}` };
}

/**
 * The checks of a deployment, in order: the server answers, the database is reachable and
 * migrated, storage takes writes, signing keys are loaded, the clocks agree, and the public URL
 * (what links and protected builds name) reaches a Latchkey server. The operator's checks need
 * LATCHKEY_ADMIN_TOKEN (read from the environment, never from the command line, where `ps` shows it).
 */
export async function runDoctor(env: Env, url: string, options: { allowHttp: boolean }): Promise<DoctorCheck[]> {
  // Refused before any request, so a doctor run either does all it can or nothing.
  // The operator token opens every developer's data.
  if (env.LATCHKEY_ADMIN_TOKEN) assertSecretTransport(url, options.allowHttp, 'LATCHKEY_ADMIN_TOKEN', 'pass --allow-http');
  const checks: DoctorCheck[] = [];
  const live = await reach(`${url}/healthz`, { method: 'GET' }).catch((err: CliError) => err);
  if (live instanceof CliError) return [{ check: 'server', status: 'fail', detail: live.message }];
  checks.push({ check: 'server', status: verdict(live.ok), detail: `${url}/healthz answered HTTP ${live.status}` });
  const ready = await reach(`${url}/readyz`, { method: 'GET' });
  checks.push({
    check: 'database',
    status: verdict(ready.ok),
    detail: ready.ok ? 'reachable (/readyz)' : `/readyz answered HTTP ${ready.status}: the server cannot reach its database`,
  });

  const token = env.LATCHKEY_ADMIN_TOKEN;
  if (!token) {
    const detail = "set LATCHKEY_ADMIN_TOKEN to the server's operator token to check this";
    for (const check of ['migrations', 'storage', 'signing keys', 'clock', 'public URL']) checks.push({ check, status: 'skipped', detail });
    return checks;
  }
  const sentAt = Date.now();
  const res = await reach(`${url}/v1/admin/diagnostics`, { method: 'GET', headers: { authorization: `Bearer ${token}` } });
  const receivedAt = Date.now();
  const body = (await res.json().catch(() => undefined)) as Diagnostics | undefined;
  if (!res.ok || !body) {
    const hint = res.status === 401 || res.status === 404 ? ": is LATCHKEY_ADMIN_TOKEN the server's own, and set on the server?" : '';
    throw new CliError(`${apiError(res.status, body).message}${hint}`, res.status === 401 || res.status === 404 ? EXIT.AUTH : EXIT.FAILED);
  }
  checks.push({ check: 'migrations', status: verdict(body.database.ok), detail: body.database.detail });
  checks.push({ check: 'storage', status: verdict(body.storage.ok), detail: body.storage.detail });
  checks.push({ check: 'signing keys', status: verdict(body.signing_keys.ok), detail: body.signing_keys.detail });
  checks.push(skewCheck(body.server_time, sentAt, receivedAt));
  checks.push(await reachable(checkedUrl(body.public_base_url)));
  return checks;
}

/** `latchkey doctor`: checks a deployment; exits 1 when any check fails. */
export function doctorCommand(env: Env, print: (out: string) => void): Command {
  return withJson(
    new Command('doctor').description(
      'Check a deployment: server, database and migrations, storage, signing keys, clock skew, public URL (operator checks need LATCHKEY_ADMIN_TOKEN)',
    ),
  )
    .option('--url <url>', 'the server to check (default: LATCHKEY_URL or the saved login)')
    .option('--allow-http', 'send LATCHKEY_ADMIN_TOKEN over plain http:// to a host that is not loopback (a private network only)')
    .action(async (opts: { url?: string; json?: boolean; allowHttp?: boolean }) => {
      const url = opts.url ? checkedUrl(opts.url) : serverUrl(env);
      const checks = await runDoctor(env, url, { allowHttp: opts.allowHttp === true });
      print(
        opts.json
          ? renderJson(checks)
          : renderTable(
              ['CHECK', 'STATUS', 'DETAIL'],
              checks.map((c) => [c.check, c.status, c.detail]),
            ),
      );
      if (checks.some((c) => c.status === 'fail')) process.exitCode = EXIT.FAILED;
    });
}
