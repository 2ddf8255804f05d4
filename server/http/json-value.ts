import { z } from 'zod';

/**
 * Any JSON value, for fields that hold the caller's own data (a license's features). One instance,
 * registered under an id: zod's union is recursive, so the OpenAPI document names it once
 * (`components.schemas.JsonValue`) and writes it as it sees fit (openapi.ts).
 */
export const JsonValue = z.json().register(z.globalRegistry, { id: 'JsonValue', description: 'Any JSON value' });
