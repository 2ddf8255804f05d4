// The seat model of what creates licenses (a license, a redemption batch, an app's sales):
// node_locked counts the devices that may activate, floating the copies running at once
// (docs/protocol.md, Floating licenses). Used by the licenses, sales and app settings pages.
import { h } from './dom.js';

export type SeatModel = 'node_locked' | 'floating';

/** The API's names of the three seat fields (an app's sales defaults carry a prefix). */
export interface SeatNames {
  seat_model: string;
  max_concurrent: string;
  lease_ttl_minutes: string;
}

const LICENSE_FIELDS: SeatNames = { seat_model: 'seat_model', max_concurrent: 'max_concurrent', lease_ttl_minutes: 'lease_ttl_minutes' };

/** A license's or batch's seats in a few words: "3 devices" or "floating, 5 seats". */
export const seatsText = (x: { seat_model: SeatModel; max_concurrent?: number | null; device_limit: number }): string =>
  x.seat_model === 'floating' ? `floating, ${x.max_concurrent} seats` : `${x.device_limit} devices`;

/** The seat fields of a license or batch as the API takes them. */
export interface SeatValues {
  seat_model: SeatModel;
  max_concurrent?: number;
  lease_ttl_minutes?: number;
}

/**
 * The seat model select with its floating-only inputs (ids `<prefix>-seat-model`,
 * `<prefix>-max-concurrent`, `<prefix>-lease-ttl`), shown only for floating; `nodeLockedOnly`
 * elements (a device limit) are hidden for floating, as the API refuses them together. `values()`
 * answers the API's fields (named by `names`): the model, and for floating the seats given.
 */
export function seatInputs(
  prefix: string,
  { names = LICENSE_FIELDS, current = {}, nodeLockedOnly = [] }: { names?: SeatNames; current?: Record<string, unknown>; nodeLockedOnly?: HTMLElement[] } = {},
) {
  const floatingNow = current[names.seat_model] === 'floating';
  const model = h(
    'select',
    { id: `${prefix}-seat-model` },
    h('option', { value: 'node_locked', selected: !floatingNow }, 'Node-locked: devices that may activate'),
    h('option', { value: 'floating', selected: floatingNow }, 'Floating: copies running at once'),
  );
  const seats = h('input', { type: 'number', id: `${prefix}-max-concurrent`, min: 1, max: 10000, value: current[names.max_concurrent] ?? '' });
  const ttl = h('input', { type: 'number', id: `${prefix}-lease-ttl`, min: 3, max: 1440, value: current[names.lease_ttl_minutes] ?? '', placeholder: '15' });
  const floatingOnly = h(
    'div',
    null,
    h('label', { for: seats.id }, 'Seats (copies running at once)'),
    seats,
    h('label', { for: ttl.id }, 'Lease TTL (minutes)'),
    ttl,
    h('p', { class: 'hint' }, 'How long a seat stays taken without a heartbeat, and the offline grace. Empty: 15.'),
  );
  const floating = () => model.value === 'floating';
  const sync = () => {
    floatingOnly.hidden = !floating();
    for (const el of nodeLockedOnly) el.hidden = floating();
  };
  model.addEventListener('change', sync);
  sync();
  return {
    element: h('div', null, h('label', { for: model.id }, 'Seat model'), model, floatingOnly),
    floating,
    names,
    /** The license fields (seat_model, max_concurrent, lease_ttl_minutes). */
    values(): SeatValues {
      return this.named() as unknown as SeatValues;
    },
    /** The fields under `names` (an app's sales defaults). */
    named(): Record<string, string | number> {
      const v: Record<string, string | number> = { [names.seat_model]: model.value };
      if (!floating()) return v;
      if (seats.value.trim() !== '') v[names.max_concurrent] = Number(seats.value);
      if (ttl.value.trim() !== '') v[names.lease_ttl_minutes] = Number(ttl.value);
      return v;
    },
  };
}
