import { z } from 'zod';
import { PageQuery, setPageHeaders } from '../http/pagination.js';
import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import type { AppsService } from './service.js';
import type { AppRow } from './store.js';

// A spread rather than a rest pattern: V8 copies the object a rest pattern leaves slowly, and
// lists map every row. The owner is blanked (undefined never reaches JSON); the response schema
// drops it anyway.
export const appView = (row: AppRow) => ({
  ...row,
  developer_id: undefined,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

export function appRoutes(apps: AppsService) {
  const tag = 'Apps';
  return [
    defineRoute({
      method: 'get',
      path: '/v1/apps',
      operationId: 'listApps',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'List your apps, oldest first',
      query: PageQuery,
      response: z.array(s.App),
      paginated: true,
      handler: async ({ actor, query, ctx }) => {
        const { rows, total } = await apps.list(actor.developerId, query);
        setPageHeaders(ctx, query, total);
        return rows.map(appView);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/apps',
      operationId: 'createApp',
      scope: 'admin',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'Register an app',
      body: s.CreateAppBody,
      response: s.App,
      status: 201,
      errors: [409],
      handler: async ({ actor, body }) => appView(await apps.create(actor.developerId, body)),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/apps/{app_id}',
      operationId: 'getApp',
      scope: 'read',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'App details and settings',
      params: s.AppIdParams,
      response: s.App,
      errors: [404],
      handler: async ({ actor, params }) => appView(await apps.get(actor.developerId, params.app_id)),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/apps/{app_id}',
      operationId: 'updateApp',
      scope: 'admin',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'Change an app; only the fields sent change',
      description:
        'A Price ID used by another app 409 PRICE_ID_IN_USE. Switching `delivery_mode` to released_only while the active push targets ' +
        'an unreleased build 409 PUSH_CONFLICT with reason push_target_not_released, unless `release_current: true`, which releases ' +
        'that build in the same change.',
      params: s.AppIdParams,
      body: s.UpdateAppBody,
      response: s.App,
      errors: [404, 409],
      handler: async ({ actor, params, body }) => appView(await apps.update(actor.developerId, params.app_id, body)),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/apps/{app_id}',
      operationId: 'deleteApp',
      scope: 'admin',
      tag,
      auth: 'developer',
      rateLimit: 'apps',
      summary: 'Delete an app with all its builds and licenses (irreversible)',
      description:
        'Its payment link (Route A) is deactivated at the payment processor first, so nobody pays through it for a license that would not be delivered; 503 PAYMENT_PROCESSOR_UNAVAILABLE (the app kept) when the processor cannot be reached.',
      params: s.AppIdParams,
      errors: [404],
      handler: ({ actor, params }) => apps.remove(actor.developerId, params.app_id),
    }),
  ];
}
