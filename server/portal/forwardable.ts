import type Router from '@koa/router';
import type { RouteDef } from '../http/route.js';

/**
 * Which API requests the portal's proxy forwards: an allow-list, not a deny-list. The path is
 * matched by the API's own router (its case-insensitive, trailing-slash-tolerant rules, its order),
 * and forwarded only when the operation it reaches is one a developer's token is for. So
 * `/v1/Auth/Login`, `/v1/auth/login/` or any other spelling of an operation that hands out tokens
 * (sign-in, refresh, registration: `auth: 'none'`), the operator's (`admin`) and the public ones
 * never pass, however the path is written; what the API would not route at all is not forwarded.
 */
export function forwardableOperations(api: Router, routes: RouteDef[]) {
  const developerOperations = new Set(routes.filter((r) => r.auth === 'developer').map((r) => r.operationId));
  return {
    /** Whether the API would answer `method path` with an operation for developers. */
    allows(method: string, path: string): boolean {
      const operation = api.match(path, method).pathAndMethod.find((layer) => layer.methods.length > 0);
      return operation?.name !== undefined && developerOperations.has(operation.name);
    },
  };
}
