import { Option, type Command } from 'commander';
import { SEAT_MODELS } from './api-values.js';
import { wholeNumber } from './options.js';

/** The seat options of what creates licenses (`licenses create`, `redemption create-batch`); the server judges their combinations. */
export function withSeatOptions(command: Command): Command {
  return command
    .addOption(new Option('--seat-model <model>', 'node_locked (default): devices that may activate; floating: copies running at once').choices(SEAT_MODELS))
    .option('--max-concurrent <n>', 'floating: copies that may run at once (required with --seat-model floating)', wholeNumber)
    .option('--lease-ttl-minutes <n>', 'floating: how long a seat stays taken without a heartbeat, and the offline grace (default 15)', wholeNumber);
}

/** The API fields of withSeatOptions' options; those not given are left out. */
export const seatFields = (opts: Record<string, unknown>) => ({
  seat_model: opts.seatModel,
  max_concurrent: opts.maxConcurrent,
  lease_ttl_minutes: opts.leaseTtlMinutes,
});

/** A license's or batch's seats in a few words: `3 devices`, or `floating 5 seats`. */
export const seatsOf = (x: { seat_model: string; device_limit: number; max_concurrent: number | null }) =>
  x.seat_model === 'floating' ? `floating ${x.max_concurrent} seats` : `${x.device_limit} devices`;
