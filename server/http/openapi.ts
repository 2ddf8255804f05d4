import { z } from 'zod';
import { ERROR_CODES } from '../errors.js';
import type { RouteDef } from './route.js';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const s = jsonSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
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
  required: ['detail', 'error_code', 'status_code'],
  properties: {
    detail: { type: 'string' },
    error_code: { type: 'string', enum: Object.keys(ERROR_CODES) },
    status_code: { type: 'integer' },
    reason: { type: 'string' },
  },
};

const SECURITY: Record<RouteDef['auth'], unknown[]> = {
  none: [],
  developer: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
  admin: [{ adminToken: [] }],
  entitlement_webhook: [{ merchantOpsSecret: [] }],
};

function requestBody(r: RouteDef): Record<string, unknown> {
  if (r.rawBody) return { requestBody: { required: true, description: r.rawBody.description, content: { 'application/json': { schema: { type: 'object' } } } } };
  if (!r.body) return {};
  const schema = jsonSchema(r.body, 'input');
  if (r.formBody) return { requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema } } } };
  if (!r.multipart) return { requestBody: { required: true, content: { 'application/json': { schema } } } };
  // zod cannot describe a streamed file part; OpenAPI's binary string does.
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  properties[r.multipart.fileField] = { type: 'string', format: 'binary', description: r.multipart.fileDescription };
  return { requestBody: { required: true, content: { 'multipart/form-data': { schema: { ...schema, properties } } } } };
}

function jsonSuccess(r: RouteDef): Record<string, unknown> {
  if (!r.response) return { 204: { description: 'Success, no body' } };
  return {
    [r.status ?? 200]: {
      description: 'Success',
      content: {
        'application/json': { schema: jsonSchema(r.response, 'output') },
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

/** A file answered whole (200), in part (206, `Range`) or not at all when the client's copy is current (304). */
function fileResponses(description: string): Record<string, unknown> {
  const binary = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } };
  const headers = {
    ETag: { schema: { type: 'string' }, description: 'The SHA-256 of the file, quoted' },
    'Accept-Ranges': { schema: { type: 'string', enum: ['bytes'] } },
    'Content-Length': { schema: { type: 'integer' } },
  };
  return {
    200: { description, content: binary, headers },
    206: { description: 'The requested byte range', content: binary, headers: { ...headers, 'Content-Range': { schema: { type: 'string' } } } },
    304: { description: 'Not modified (If-None-Match)' },
  };
}

/** OpenAPI 3.1 document generated from the same route definitions that validate requests. */
export function buildOpenApi(routes: RouteDef[], info: { version: string; serverUrl: string }): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const responses = !r.fileResponse
      ? jsonSuccess(r)
      : r.fileResponse.contentType
        ? { 200: { description: r.fileResponse.description, content: { [r.fileResponse.contentType]: { schema: { type: 'string' } } } } }
        : fileResponses(r.fileResponse.description);
    const errorStatuses = new Set<number>([400, 429, ...(r.errors ?? [])]);
    if (r.auth !== 'none') errorStatuses.add(401);
    for (const status of [...errorStatuses].sort()) {
      responses[String(status)] = { $ref: '#/components/responses/Error' };
    }
    (paths[r.path] ??= {})[r.method] = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      security: SECURITY[r.auth],
      'x-rate-limit-class': r.rateLimit,
      parameters: [...parameters(r.params, 'path'), ...parameters(r.query, 'query')],
      ...requestBody(r),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Latchkey license authority',
      version: info.version,
      description:
        'Licensing, delivery and update service for desktop apps. Every error body is `{ detail, error_code, status_code }`. ' +
        'Every response carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`; a 429 adds `Retry-After`. ' +
        'Lists take `limit` (default 20, at most 100) and `offset`, answer a bare JSON array, and carry `X-Total-Count` and an RFC 8288 `Link` header.',
    },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An access token from login, or an API key' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'LATCHKEY_ADMIN_TOKEN' },
        merchantOpsSecret: {
          type: 'apiKey', in: 'header', name: 'X-MerchantOps-Secret',
          description: 'The entitlement webhook secret, sent with the per-app URL token in the path ({webhook_token}); a wrong token answers 404',
        },
      },
      schemas: { Error: ERROR_BODY },
      responses: {
        Error: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    },
  };
}
