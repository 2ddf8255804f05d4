/** What the sweeps read from the OpenAPI document: operations, and sample values from their JSON Schemas. */

export type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minLength?: number;
  minimum?: number;
  exclusiveMinimum?: number;
  items?: JsonSchema;
  minItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
};

export interface Operation {
  method: string;
  path: string;
  operationId: string;
  security: Record<string, string[]>[];
  pathParams: string[];
  queryParams: { name: string; schema: JsonSchema }[];
  /** The body's media type and schema, when the operation takes one. */
  body?: { contentType: string; schema: JsonSchema };
}

export function operationsOf(document: { paths: Record<string, Record<string, any>> }): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params: { name: string; in: string; schema: JsonSchema }[] = op.parameters ?? [];
      const content = op.requestBody?.content as Record<string, { schema: JsonSchema }> | undefined;
      const [contentType, media] = Object.entries(content ?? {})[0] ?? [];
      operations.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        security: op.security ?? [],
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        ...(contentType && media ? { body: { contentType, schema: media.schema } } : {}),
      });
    }
  }
  return operations;
}

const typesOf = (schema: JsonSchema): string[] => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);

/** A value the schema most likely accepts: the deepest a bad-input variant can reach is one field away from valid. */
export function sampleOf(schema: JsonSchema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const alternative = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (alternative) return sampleOf(alternative);
  const type = typesOf(schema).find((t) => t !== 'null');
  switch (type) {
    case 'string':
      if (schema.format === 'email') return 'sweep@example.com';
      if (schema.format === 'date-time') return new Date().toISOString();
      if (schema.format === 'uri') return 'https://example.com/';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return Math.max(1, Math.ceil(schema.minimum ?? schema.exclusiveMinimum ?? 1));
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sampleOf(schema.items ?? { type: 'string' }));
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((name) => [name, sampleOf(schema.properties?.[name] ?? { type: 'string' })]));
    default:
      return typesOf(schema).includes('null') ? null : 'x';
  }
}
