import { Command, InvalidArgumentError } from 'commander';

export function wholeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number');
  return n;
}

export function jsonObject(value: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // reported below, like any other non-object
  }
  throw new InvalidArgumentError('must be a JSON object, e.g. \'{"tier":"pro"}\'');
}

export const withJson = (cmd: Command) => cmd.option('--json', 'print the API response as JSON');

/** `--limit` and `--offset` of the API's paginated lists. */
export const withPage = (cmd: Command) =>
  cmd.option('--limit <n>', 'at most this many (default 20, at most 100)', wholeNumber).option('--offset <n>', 'skip this many', wholeNumber);

/** `?name=value&...` of the values given, or nothing. */
export function queryString(params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
  return query.size ? `?${query}` : '';
}

/** `/v1/apps/<app>` and what is below it, with the ids escaped. */
export const appPath = (appId: string, ...below: string[]) => ['/v1/apps', appId, ...below].map((part, i) => (i ? encodeURIComponent(part) : part)).join('/');
