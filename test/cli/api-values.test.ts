import { describe, expect, it } from 'vitest';
import * as cli from '../../cli/src/api-values.js';
import { DELIVERY_MODES, PLATFORMS, PROTECTION_LEVELS } from '../../server/apps/schemas.js';
import { BUILD_PLATFORMS, BUILD_STATUSES } from '../../server/builds/schemas.js';
import { LICENSE_TYPES, SEAT_MODELS } from '../../server/licenses/rules.js';
import { METER_PERIODS } from '../../server/licenses/meters/periods.js';
import { LICENSE_STATUS_FILTERS } from '../../server/licenses/schemas.js';

// The CLI ships without the server, so it keeps its own copy of the choices it offers: this is
// where a change to one of the server's closed lists shows that the CLI must follow.
describe("the CLI's choices", () => {
  it.each([
    ['APP_PLATFORMS', cli.APP_PLATFORMS, PLATFORMS],
    ['BUILD_PLATFORMS', cli.BUILD_PLATFORMS, BUILD_PLATFORMS],
    ['BUILD_STATUSES', cli.BUILD_STATUSES, BUILD_STATUSES],
    ['PROTECTION_LEVELS', cli.PROTECTION_LEVELS, PROTECTION_LEVELS],
    ['DELIVERY_MODES', cli.DELIVERY_MODES, DELIVERY_MODES],
    ['LICENSE_TYPES', cli.LICENSE_TYPES, LICENSE_TYPES],
    ['SEAT_MODELS', cli.SEAT_MODELS, SEAT_MODELS],
    ['LICENSE_STATUS_FILTERS', cli.LICENSE_STATUS_FILTERS, LICENSE_STATUS_FILTERS],
    ['METER_PERIODS', cli.METER_PERIODS, METER_PERIODS],
  ] as const)("%s are the server's", (_name, offered, accepted) => {
    expect([...offered]).toEqual([...accepted]);
  });
});
