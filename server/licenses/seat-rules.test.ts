import { describe, expect, it } from 'vitest';
import { CreateAppBody, UpdateAppBody, soldSeatColumns } from '../apps/schemas.js';
import { seatColumns } from './rules.js';

describe('seatColumns: what a license or batch stores of its seat fields', () => {
  it('keeps a floating one’s seats in device_limit and defaults its lease TTL', () => {
    expect(seatColumns({ seat_model: 'floating', max_concurrent: 4 }, 2)).toEqual({ seat_model: 'floating', device_limit: 4, lease_ttl_minutes: 15 });
    expect(seatColumns({ seat_model: 'floating', max_concurrent: 4, lease_ttl_minutes: 60 }, 2)).toEqual({ seat_model: 'floating', device_limit: 4, lease_ttl_minutes: 60 });
  });

  it('gives a node-locked one its device limit, else the default, and no lease TTL', () => {
    expect(seatColumns({ seat_model: 'node_locked', device_limit: 3 }, 2)).toEqual({ seat_model: 'node_locked', device_limit: 3, lease_ttl_minutes: null });
    expect(seatColumns({ seat_model: 'node_locked' }, 2)).toEqual({ seat_model: 'node_locked', device_limit: 2, lease_ttl_minutes: null });
  });
});

describe("an app's sold seat model", () => {
  it('is set whole: the model with its seats, the lease TTL defaulted, node_locked clearing the seats', () => {
    expect(soldSeatColumns({ sold_seat_model: 'floating', sold_max_concurrent: 5 })).toEqual({ sold_seat_model: 'floating', sold_max_concurrent: 5, sold_lease_ttl_minutes: 15 });
    expect(soldSeatColumns({ sold_seat_model: 'node_locked' })).toEqual({ sold_seat_model: 'node_locked', sold_max_concurrent: null, sold_lease_ttl_minutes: null });
    expect(soldSeatColumns({})).toEqual({});
  });

  it('refuses seats without the model, floating without seats and node_locked with them', () => {
    const refused = (body: unknown) => !UpdateAppBody.safeParse(body).success;
    expect(refused({ sold_max_concurrent: 3 })).toBe(true);
    expect(refused({ sold_lease_ttl_minutes: 30 })).toBe(true);
    expect(refused({ sold_seat_model: 'floating' })).toBe(true);
    expect(refused({ sold_seat_model: 'floating', sold_max_concurrent: null })).toBe(true);
    expect(refused({ sold_seat_model: 'node_locked', sold_max_concurrent: 3 })).toBe(true);
    expect(refused({ sold_seat_model: 'node_locked', sold_lease_ttl_minutes: 30 })).toBe(true);
    expect(refused({ sold_seat_model: 'floating', sold_max_concurrent: 3, sold_lease_ttl_minutes: 30 })).toBe(false);
    expect(refused({ sold_seat_model: 'node_locked' })).toBe(false);
    expect(CreateAppBody.safeParse({ name: 'A', platforms: ['linux-x64'], sold_max_concurrent: 3 }).success).toBe(false);
    expect(CreateAppBody.parse({ name: 'A', platforms: ['linux-x64'] }).sold_seat_model).toBe('node_locked');
  });
});
