import { client } from '../../support/http.js';
import type { ApiResponse, CallOptions } from '../../support/http.js';
import { chaosClient } from '../client.js';
import type { LatchkeyProcess } from '../environment.js';
import type { FigureSheet } from '../figures.js';
import { operationsOf, sampleOf, type JsonSchema, type Operation } from '../openapi-samples.js';
import type { SweepWorld } from '../sweep-world.js';

/** Path segments that must be refused, never crash routing or decoding: NUL, broken and overlong escapes, traversal, huge. */
const BAD_SEGMENTS = ['%00', '%ZZ', '%C0%AF', '%F0%9F%92%A9', '..%2F..%2Fetc%2Fpasswd', '%E2%80%AE', 'x'.repeat(4000), '%20'];
const BAD_QUERY_VALUES = ['-1', 'abc', '1e309', '9'.repeat(400), '', '%00', '%ZZ', 'x'.repeat(10_000), '[]', 'true'];
/** Strings that break naive code: lone surrogates, NUL, bidi overrides, astral and combining characters, BOM, non-characters. */
const UNICODE_EDGES = ['\ud800', 'a\u0000b', '\u202eevil', '😀'.repeat(2000), 'e\u0301\u0301\u0301', '\ufeffx', '\uffff', 'Ａ', '\u2028\u2029'];
const WRONG_TYPES: unknown[] = [123, -1, 1.5, 1e308, 'str', true, null, [], {}, [1, 2]];
const MALFORMED_JSON = [
  '{',
  '{"a":',
  '[',
  'nul',
  '"str"',
  '123',
  'null',
  '[]',
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  '\ufeff{}',
  '{"a":1,"a":2}',
];
/** `{"x":"\xC0\x80"}`: an overlong (invalid) UTF-8 encoding. */
const INVALID_UTF8 = new Uint8Array([0x7b, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xc0, 0x80, 0x22, 0x7d]);

interface Variant {
  name: string;
  path: string;
  options: CallOptions;
}

/**
 * Every operation of the OpenAPI document, called with malformed JSON, wrong types, huge strings
 * and arrays, unicode edge cases, missing and extra fields, wrong content types, bad path and query
 * values, and missing, garbage and misplaced credentials. Each is one field away from a valid
 * request of a real developer with real ids, so it reaches as deep as validation lets it. A 5xx is
 * a bug; a 4xx of the JSON API must be the standard error body.
 */
export async function badInputSweep(sheet: FigureSheet, server: LatchkeyProcess, world: SweepWorld): Promise<Map<string, number>> {
  const call = client(server.url);
  const document = (await call('GET', '/v1/openapi.json')).body;
  // Destructive operations last, so the rest meet the developer's resources still in place.
  const operations = operationsOf(document).sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
  const http = chaosClient(sheet, server.url);
  const triedPerRoute = new Map<string, number>();
  const credentials: Credentials = { accessToken: world.dev.accessToken, adminToken: server.adminToken, webhookSecret: world.webhookSecret };

  for (const op of operations) {
    const route = `${op.method} ${op.path}`;
    for (const variant of variantsOf(op, world.ids, credentials)) {
      const answer = await http.send(route, op.method, variant.path, { ...variant.options, timeoutMs: 30_000 });
      triedPerRoute.set(route, (triedPerRoute.get(route) ?? 0) + 1);
      judge(sheet, route, variant.name, answer, op.path.startsWith('/v1/'));
    }
  }
  return triedPerRoute;
}

function judge(sheet: FigureSheet, route: string, variant: string, answer: ApiResponse | undefined, jsonApi: boolean): void {
  if (answer === undefined) {
    sheet.violated(1, `${route} [${variant}]: no answer`);
    return;
  }
  if (answer.status >= 500) sheet.note(`  ... the request: ${route} [${variant}]`);
  else if (jsonApi && answer.status >= 400) {
    const body = answer.body;
    const standard = body && typeof body === 'object' && typeof body.detail === 'string' && typeof body.error_code === 'string' && body.status_code === answer.status;
    if (!standard) sheet.violated(1, `${route} [${variant}]: ${answer.status} without the standard error body`);
  }
}

interface Credentials {
  accessToken: string;
  adminToken: string;
  webhookSecret: string;
}

/** The credential an operation's security scheme asks for. */
export function credentialsFor(op: Operation, c: Pick<Credentials, 'accessToken'> & Partial<Credentials>): CallOptions {
  if (op.security.some((s) => 'adminToken' in s)) return { token: c.adminToken };
  if (op.security.some((s) => 'bearerAuth' in s)) return { token: c.accessToken };
  if (op.security.some((s) => 'merchantOpsSecret' in s)) return { headers: { 'x-merchantops-secret': c.webhookSecret ?? '' } };
  return {};
}

export function pathOf(op: Operation, values: Record<string, string>): string {
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? 'x');
}

function variantsOf(op: Operation, known: Record<string, string>, given: Credentials): Variant[] {
  const credentials = credentialsFor(op, given);
  const validPath = pathOf(op, known);
  const variants: Variant[] = [];
  const add = (name: string, options: CallOptions, path = validPath) => variants.push({ name, path, options: { ...credentials, ...options } });
  const validBody = op.body ? sampleOf(op.body.schema) : undefined;
  const bodyOptions = (body: unknown): CallOptions =>
    op.body?.contentType === 'application/json' || !op.body ? { body } : { raw: { data: JSON.stringify(body), contentType: 'application/json' } };

  // Credentials: missing, garbage, and the wrong kind.
  if (op.security.length > 0) {
    variants.push(
      { name: 'no credentials', path: validPath, options: bodyOptions(validBody) },
      { name: 'garbage bearer', path: validPath, options: { token: 'garbage', ...bodyOptions(validBody) } },
      { name: 'huge bearer', path: validPath, options: { token: 'x'.repeat(10_000), ...bodyOptions(validBody) } },
      { name: 'garbage API key', path: validPath, options: { apiKey: 'lk_garbage', ...bodyOptions(validBody) } },
      { name: 'basic auth', path: validPath, options: { headers: { authorization: 'Basic dXNlcjpwYXNz' }, ...bodyOptions(validBody) } },
      { name: 'empty bearer', path: validPath, options: { headers: { authorization: 'Bearer ' }, ...bodyOptions(validBody) } },
      {
        name: 'misplaced credential',
        path: validPath,
        options: { token: credentials.token === given.adminToken ? given.accessToken : given.adminToken, ...bodyOptions(validBody) },
      },
    );
    if (op.security.some((s) => 'merchantOpsSecret' in s)) {
      add('garbage webhook secret', { headers: { 'x-merchantops-secret': 'garbage' }, ...bodyOptions(validBody) });
    }
  }

  // Path parameters: each one bad in turn, the others real.
  for (const param of op.pathParams) {
    for (const segment of BAD_SEGMENTS) add(`path ${param}=${segment.slice(0, 20)}`, bodyOptions(validBody), pathOf(op, { ...known, [param]: segment }));
  }

  // Query parameters: each one bad in turn, repeated, and an unknown one.
  for (const { name } of op.queryParams) {
    for (const value of BAD_QUERY_VALUES) add(`query ${name}=${value.slice(0, 20)}`, {}, `${validPath}?${name}=${value}`);
    add(`query ${name} repeated`, {}, `${validPath}?${name}=1&${name}=2`);
  }
  if (op.method === 'GET') add('unknown query parameter', {}, `${validPath}?unknown_parameter=1`);

  if (!op.body) return variants;

  // The body as a whole: malformed JSON, wrong media types, too large.
  for (const raw of MALFORMED_JSON) add(`malformed JSON ${raw.slice(0, 15)}`, { raw: { data: raw, contentType: 'application/json' } });
  add('invalid UTF-8', { raw: { data: INVALID_UTF8, contentType: 'application/json' } });
  add('JSON as text/plain', { raw: { data: JSON.stringify(validBody), contentType: 'text/plain' } });
  add('form-encoded', { raw: { data: 'a=b&c=d', contentType: 'application/x-www-form-urlencoded' } });
  add('multipart without parts', { raw: { data: '--b--\r\n', contentType: 'multipart/form-data; boundary=b' } });
  add('multipart without a boundary', { raw: { data: 'garbage', contentType: 'multipart/form-data' } });
  add('empty content type', { raw: { data: new TextEncoder().encode(JSON.stringify(validBody)), contentType: '' } });
  add('2 MB body', {
    raw: { data: JSON.stringify({ padding: 'x'.repeat(2 * 1024 * 1024) }), contentType: op.body.contentType.startsWith('multipart') ? 'application/json' : op.body.contentType },
  });
  add('JSON array body', bodyOptions([validBody]));

  if (!isObject(validBody)) return variants;
  const properties = op.body.schema.properties ?? {};
  add('empty object', bodyOptions({}));
  add('extra field', bodyOptions({ ...validBody, unexpected_field: 'x' }));
  for (const name of op.body.schema.required ?? []) {
    const { [name]: _missing, ...rest } = validBody;
    add(`missing ${name}`, bodyOptions(rest));
  }
  for (const [name, schema] of Object.entries<JsonSchema>(properties)) {
    if (schema.format === 'binary') continue;
    for (const wrong of WRONG_TYPES) add(`${name}=${JSON.stringify(wrong)}`, bodyOptions({ ...validBody, [name]: wrong }));
    add(`${name} huge string`, bodyOptions({ ...validBody, [name]: 'x'.repeat(300_000) }));
    add(`${name} huge array`, bodyOptions({ ...validBody, [name]: Array.from({ length: 50_000 }, () => 'x') }));
    add(`${name} deep object`, bodyOptions({ ...validBody, [name]: nested(200) }));
    for (const text of UNICODE_EDGES) add(`${name} unicode ${JSON.stringify(text.slice(0, 6))}`, bodyOptions({ ...validBody, [name]: text }));
  }
  return variants;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function nested(depth: number): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}
