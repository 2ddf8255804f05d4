import { z } from 'zod';

const MISSING_API_KEY = 'is not set; create an API key in the portal or with POST /v1/auth/api-keys/rotate';

/** The CLI's settings come from the environment, like the server's; checked once, on first use. */
const CliEnv = z.object({
  LATCHKEY_URL: z.url({ error: 'must be a URL such as https://licenses.example.com' }).default('http://127.0.0.1:8080'),
  LATCHKEY_API_KEY: z.string({ error: MISSING_API_KEY }).min(1, MISSING_API_KEY),
});

const ErrorBody = z.object({ detail: z.string(), error_code: z.string() });

/** A failure to show the user as is: the server's detail, or what went wrong reaching it. */
export class CliError extends Error {}

export interface ApiResponse {
  body: unknown;
  headers: Headers;
}

export interface ApiClient {
  request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiResponse>;
}

export function apiClientFromEnv(env: Record<string, string | undefined>): ApiClient {
  let settings: z.infer<typeof CliEnv> | undefined;
  return {
    async request(method, path, body) {
      if (!settings) {
        const parsed = CliEnv.safeParse(env);
        if (!parsed.success) throw new CliError(parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; '));
        settings = parsed.data;
      }
      const url = `${settings.LATCHKEY_URL.replace(/\/+$/, '')}${path}`;
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers: { 'x-api-key': settings.LATCHKEY_API_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        throw new CliError(`cannot reach ${settings.LATCHKEY_URL}: ${(err as Error).cause ?? (err as Error).message}`);
      }
      const text = await res.text();
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      if (!res.ok) {
        const error = ErrorBody.safeParse(parsed);
        throw new CliError(error.success ? `${error.data.detail} (${error.data.error_code})` : `HTTP ${res.status}`);
      }
      return { body: parsed, headers: res.headers };
    },
  };
}
