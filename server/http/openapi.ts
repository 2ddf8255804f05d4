import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { JsonValue } from './json-value.js';
import { declaredErrorStatuses, type RouteDef } from './route.js';

type JsonSchema = Record<string, unknown>;
type ToSchema = (schema: z.ZodType, io: 'input' | 'output') => JsonSchema;

/** Points zod's schema-local `$ref`s (`#/$defs/Name`) at the document's `#/components/schemas/Name`. */
function refsToComponents(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(refsToComponents);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key, key === '$ref' && typeof v === 'string' ? v.replace(/^#\/\$defs\//, '#/components/schemas/') : refsToComponents(v)]),
  );
}

/**
 * Any JSON value is written `{}` (with its description): it accepts the same values as zod's
 * recursive union, which TypeScript generators cannot type (openapi-typescript issue 1603).
 */
function writeJsonValueAsAny({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: JsonSchema }): void {
  if (zodSchema === JsonValue) delete jsonSchema.anyOf;
}

/**
 * Converts route schemas to JSON Schema, moving the parts zod extracts into `$defs` (schemas
 * registered with an id; a recursive schema must be) into the document's `components.schemas`:
 * a `$ref` inside an operation resolves from the document's root, not the schema's.
 */
function schemaConverter(components: Record<string, JsonSchema>): ToSchema {
  return (schema, io) => {
    const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', override: writeJsonValueAsAny }) as JsonSchema;
    const defs = (out.$defs ?? {}) as Record<string, JsonSchema>;
    delete out.$schema;
    delete out.$defs;
    for (const [name, def] of Object.entries(defs)) {
      // zod numbers unnamed parts per conversion: `__schema0` of two operations are different schemas.
      if (name.startsWith('__schema')) {
        throw new Error(`A recursive schema has no id: register it with z.globalRegistry and an id to name it in the OpenAPI document (${JSON.stringify(def).slice(0, 120)})`);
      }
      const component = refsToComponents(def) as JsonSchema;
      if (components[name] && JSON.stringify(components[name]) !== JSON.stringify(component)) {
        throw new Error(`Two different schemas (or the input and output of one) are registered with the id ${name}`);
      }
      components[name] = component;
    }
    return refsToComponents(out) as JsonSchema;
  };
}

function parameters(toSchema: ToSchema, schema: z.ZodType | undefined, where: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const s = toSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, prop]) => ({
    name,
    in: where,
    required: where === 'path' || (s.required ?? []).includes(name),
    schema: prop,
    ...(prop.description ? { description: prop.description } : {}),
  }));
}

const ERROR_BODY = {
  type: 'object',
  description: 'Every error answer: the closed list of `error_code` values, each with its HTTP status',
  required: ['detail', 'error_code', 'status_code'],
  properties: {
    detail: { type: 'string', description: 'What went wrong, for people' },
    error_code: { type: 'string', enum: Object.keys(ERROR_CODES) },
    status_code: { type: 'integer', description: 'The HTTP status again' },
    reason: { type: 'string', description: 'The machine-readable cause, with `PUSH_CONFLICT` and `STORE_STILL_ENTITLED`' },
    earliest_expiry: { type: 'string', format: 'date-time', description: 'With `NO_SEAT_AVAILABLE`: when the first lease holding a seat expires unless renewed' },
    remaining: { type: 'integer', description: "With `USAGE_LIMIT_EXCEEDED`: the units left in the meter's period" },
    period_ends_at: { type: ['string', 'null'], format: 'date-time', description: "With `USAGE_LIMIT_EXCEEDED`: when the meter's balance resets; null for a lifetime meter" },
    request_id: {
      type: 'string',
      description:
        "The request's id, as in the `X-Request-Id` header (the caller's own when it sent a well-formed one): the server's log lines of this request carry it as `req_id`, so quote it when asking the operator. Absent only from the few answers given before a request exists (431, a malformed request, a body timeout)",
    },
  },
};

/** The headers the rate limiter sets (rate-window.ts), and the wait a 429 or a 503 asks for. */
const HEADERS = {
  'RateLimit-Limit': { description: "Requests allowed in the current window of the operation's class (`x-rate-limit-class`)", schema: { type: 'integer', minimum: 1 } },
  'RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the current window ends', schema: { type: 'integer', minimum: 1 } },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 1 } },
};
type HeaderName = keyof typeof HEADERS;
const headerRefs = (...names: HeaderName[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
const RATE_LIMIT_HEADERS = headerRefs('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset');

const errorResponseRef = (status: number) => ({ $ref: `#/components/responses/Error${status}` });

/** One response per error status, naming the codes of the closed list that carry it. */
function errorResponse(status: number): JsonSchema {
  const codes = Object.keys(ERROR_CODES).filter((code) => ERROR_CODES[code as ErrorCode] === status);
  if (!codes.length) throw new Error(`A route declares the error status ${status}, which no error code has`);
  const retry = status === 429 || status === 503;
  return {
    description: `${STATUS_CODES[status]}: \`error_code\` is ${codes.map((code) => `\`${code}\``).join(', ')}`,
    headers: retry ? { ...RATE_LIMIT_HEADERS, ...headerRefs('Retry-After') } : RATE_LIMIT_HEADERS,
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/Error' },
        example: { detail: 'What went wrong, in words', error_code: codes[0], status_code: status },
      },
    },
  };
}

const SECURITY: Record<Exclude<RouteDef['auth'], 'developer'>, unknown[]> = {
  none: [],
  admin: [{ adminToken: [] }],
  entitlement_webhook: [{ merchantOpsSecret: [] }],
};

/** A developer operation lists the API key scope it needs as the role of both schemes; a `session` one takes no API key. */
function security(r: RouteDef): unknown[] {
  if (r.auth !== 'developer') return SECURITY[r.auth];
  const scope = r.scope ?? 'session';
  return scope === 'session' ? [{ bearerAuth: ['session'] }] : [{ bearerAuth: [scope] }, { apiKeyHeader: [scope] }];
}

const SCOPES =
  'The role an operation lists is what an API key needs for it: the scope (`admin` includes every other) or `session`. ' +
  '`read`: every GET. `licenses`: license, activation, redemption-code and marketplace writes. `builds`: build uploads, releases, ' +
  'signed packages and update pushes. `admin`: everything an API key may do (those, and app, payment and webhook settings). ' +
  '`session`: an access token only; API keys, whatever their scopes, are refused (403 SESSION_REQUIRED): changing 2FA, the password or API keys. ' +
  'A key without the scope is refused with 403 INSUFFICIENT_SCOPE.';

function requestBody(r: RouteDef, toSchema: ToSchema): Record<string, unknown> {
  if (r.streamBody) {
    return { requestBody: { required: true, description: r.streamBody.description, content: { [r.streamBody.contentType]: { schema: { type: 'string', format: 'binary' } } } } };
  }
  if (r.rawBody) return { requestBody: { required: true, description: r.rawBody.description, content: { 'application/json': { schema: { type: 'object' } } } } };
  if (!r.body) return {};
  const schema = toSchema(r.body, 'input');
  if (r.formBody) return { requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema } } } };
  if (!r.multipart) return { requestBody: { required: true, content: { 'application/json': { schema } } } };
  // zod cannot describe a streamed file part; OpenAPI's binary string does.
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  properties[r.multipart.fileField] = { type: 'string', format: 'binary', description: r.multipart.fileDescription };
  return { requestBody: { required: true, content: { 'multipart/form-data': { schema: { ...schema, properties } } } } };
}

function jsonSuccess(r: RouteDef, toSchema: ToSchema): Record<string, JsonSchema> {
  if (!r.response) return { 204: { description: 'Success, no body' } };
  return {
    [r.status ?? 200]: {
      description: 'Success',
      content: {
        'application/json': { schema: toSchema(r.response, 'output') },
        ...(r.alternative ? { [r.alternative.contentType]: { schema: { type: 'string', description: r.alternative.description } } } : {}),
      },
      ...(r.paginated
        ? {
            headers: {
              'X-Total-Count': { schema: { type: 'integer' }, description: 'Items across all pages' },
              Link: { schema: { type: 'string' }, description: 'RFC 8288 first/prev/next/last pages' },
            },
          }
        : {}),
    },
    ...(r.noContent ? { 204: { description: r.noContent } } : {}),
  };
}

/**
 * A file answered whole (200), in part (206, `Range`) or not at all when the client's copy is current
 * (304); or, on a server whose object storage presigns downloads, a redirect to the object (302).
 */
function fileResponses(description: string): Record<string, JsonSchema> {
  const binary = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } };
  const headers = {
    ETag: { schema: { type: 'string' }, description: 'The SHA-256 of the file, quoted' },
    'Accept-Ranges': { schema: { type: 'string', enum: ['bytes'] } },
    'Content-Length': { schema: { type: 'integer' } },
  };
  return {
    200: { description, content: binary, headers },
    206: { description: 'The requested byte range', content: binary, headers: { ...headers, 'Content-Range': { schema: { type: 'string' } } } },
    302: {
      description:
        'With LATCHKEY_S3_PRESIGN=true, for a signed link no download allowance counts: the request was checked; the file is at `Location`, a presigned URL valid 60 seconds (send the Range there)',
      headers: { Location: { schema: { type: 'string' } }, ETag: headers.ETag },
    },
    304: { description: 'Not modified (If-None-Match)' },
  };
}

function successResponses(r: RouteDef, toSchema: ToSchema): Record<string, JsonSchema> {
  const responses = !r.fileResponse
    ? jsonSuccess(r, toSchema)
    : r.fileResponse.contentType
      ? r.status && r.status >= 300 && r.status < 400
        ? { [r.status]: { description: r.fileResponse.description, headers: { Location: { schema: { type: 'string' }, description: 'Where the browser goes next' } } } }
        : { [r.status ?? 200]: { description: r.fileResponse.description, content: { [r.fileResponse.contentType]: { schema: { type: 'string' } } } } }
      : fileResponses(r.fileResponse.description);
  // The limiter counts every operation before its handler runs: each answer carries the window's state.
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [status, { ...response, headers: { ...RATE_LIMIT_HEADERS, ...(response.headers as object | undefined) } }]),
  );
}

/**
 * Every route's tag, in the order the reference at /docs shows them; a tag missing here fails the
 * lint (redocly.yaml: operation-tag-defined).
 */
const TAGS: Record<string, string> = {
  'Developer account': 'Registration, login with optional two-factor authentication, sessions, password change and reset, and scoped API keys',
  Apps: 'The apps a developer protects and sells, and their settings',
  Builds: 'Uploaded artifacts, scanned and protected in the background; releases and signed downloads',
  Licenses: 'License keys: create, list, revoke, reset their devices',
  Runtime: 'Calls of installed apps (the runtime SDK): activation, token refresh, update checks and reports',
  Updates: "Update pushes to an app's customers or to one license",
  Payments: 'Selling through the payment processor: the connected account, payment and purchase links, its notifications',
  Marketplace: 'Licenses provisioned for marketplace or own-storefront orders',
  'Redemption codes': 'Batches of single-use codes that customers redeem for a license',
  'Entitlement webhook': "A commerce platform's entitlement decisions and their companion endpoints, called by the developer's broker",
  Stats: 'Activations, sales and platform fees owed',
  Public: 'Without credentials: signing keys, pricing, purchases, hosted delivery and redemption pages',
  Operator: 'Endpoints of whoever runs the server, enabled by LATCHKEY_ADMIN_TOKEN',
  Health: 'Liveness and readiness, for load balancers; rate-limited (class `health`) like every operation, generously',
};

const DESCRIPTION = `The Latchkey license authority's HTTP API: licensing, protected builds, delivery and updates for desktop apps.
This document is generated from the route definitions that validate every request and shape every answer, so it is what the server does; \`GET /docs\` renders it.
Every error body is \`{ detail, error_code, status_code, request_id }\` (plus \`reason\` where named, \`earliest_expiry\` with \`NO_SEAT_AVAILABLE\`, \`remaining\` and \`period_ends_at\` with \`USAGE_LIMIT_EXCEEDED\`), with \`error_code\` from one closed list (the \`Error\` schema).
A developer whose Latchkey subscription was deleted is deactivated until a new one: every developer operation that changes something, except securing the account or reducing what it exposes (password, 2FA, revoking or rotating API keys, rotating or disabling the entitlement webhook, disconnecting the payment account, deleting a payment link, revoking licenses and redemption codes), answers 403 \`ACCOUNT_DEACTIVATED\`; reads, sign-in and the runtime calls of their customers' apps keep working.
Every operation's answer carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\` for its rate-limit class (\`x-rate-limit-class\`); a 429 adds \`Retry-After\`.
Lists take \`limit\` (default 20, at most 100) and \`offset\`, answer a bare JSON array, and carry \`X-Total-Count\` and an RFC 8288 \`Link\` header.
Where the service contract leaves a choice open (error codes and statuses beyond it, limits it does not number, the shape of answers it does not show), this document states what the server chose, and the repository's \`docs/\` explains why.`;

/** OpenAPI 3.1 document generated from the same route definitions that validate requests. */
export function buildOpenApi(routes: RouteDef[], info: { version: string; serverUrl: string }): JsonSchema {
  const schemas: Record<string, JsonSchema> = { Error: ERROR_BODY };
  const toSchema = schemaConverter(schemas);
  const errorStatuses = new Set<number>();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const responses: Record<string, unknown> = successResponses(r, toSchema);
    for (const status of [...declaredErrorStatuses(r)].sort()) {
      responses[status] = errorResponseRef(status);
      errorStatuses.add(status);
    }
    (paths[r.path] ??= {})[r.method] = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      security: security(r),
      'x-rate-limit-class': r.rateLimit,
      parameters: [...parameters(toSchema, r.params, 'path'), ...parameters(toSchema, r.query, 'query')],
      ...requestBody(r, toSchema),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Latchkey license authority', version: info.version, description: DESCRIPTION },
    servers: [{ url: info.serverUrl }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: `An access token from login (it may do everything), or an API key. ${SCOPES}` },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: `An API key. ${SCOPES}` },
        adminToken: { type: 'http', scheme: 'bearer', description: 'LATCHKEY_ADMIN_TOKEN' },
        merchantOpsSecret: {
          type: 'apiKey',
          in: 'header',
          name: 'X-MerchantOps-Secret',
          description: 'The entitlement webhook secret, sent with the per-app URL token in the path ({webhook_token}); a wrong token answers 404',
        },
      },
      schemas,
      headers: HEADERS,
      responses: Object.fromEntries([...errorStatuses].sort().map((status) => [`Error${status}`, errorResponse(status)])),
    },
  };
}
