import type { Migration } from '../migrate.js';
import { foundation } from './001_foundation.js';

/** Every migration, in the order it applies. Append; never reorder or edit an applied one. */
export const migrations: Migration[] = [foundation];
