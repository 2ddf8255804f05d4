import type { Knex } from 'knex';
import { effectivePlan, type Plan } from '../accounts/plan.js';

/** The developer's app a channel sells, with what selling needs of it and its owner's plan now. */
export interface ChannelApp {
  id: string;
  developer_id: string;
  name: string;
  delivery_mode: string;
  platforms: string[];
  default_device_limit: number;
  plan: Plan;
}

/** The developer's app; never another developer's. */
export const channelApp = (q: Knex, developerId: string, appId: string, now: Date) =>
  q('apps')
    .join('developers', 'developers.id', 'apps.developer_id')
    .where({ 'apps.id': appId, 'apps.developer_id': developerId })
    .first<ChannelApp | undefined>('apps.id', 'apps.developer_id', 'apps.name', 'apps.delivery_mode', 'apps.platforms', 'apps.default_device_limit', effectivePlan(q, now));
