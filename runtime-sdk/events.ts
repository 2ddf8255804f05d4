import type { LicenseError } from './errors.js';
import type { LicenseStatus } from './status.js';

export interface LicenseEvents {
  /** The state or its reason changed (a refresh, the grace running out, a revocation). */
  change: (status: LicenseStatus, previous: LicenseStatus) => void;
  /** A background refresh did not get an answer; the state may still be usable (grace). */
  'refresh-failed': (error: LicenseError) => void;
}

export type LicenseEventName = keyof LicenseEvents;

/** A listener that throws must not break licensing; its error goes to `onListenerError`. */
export class TypedEvents {
  private readonly listeners = new Map<LicenseEventName, Set<LicenseEvents[LicenseEventName]>>();

  constructor(private readonly onListenerError: (error: unknown) => void) {}

  on<E extends LicenseEventName>(event: E, listener: LicenseEvents[E]): () => void {
    const set = this.listeners.get(event) ?? new Set();
    set.add(listener);
    this.listeners.set(event, set);
    return () => set.delete(listener);
  }

  emit<E extends LicenseEventName>(event: E, ...args: Parameters<LicenseEvents[E]>): void {
    for (const listener of this.listeners.get(event) ?? []) {
      try {
        (listener as (...a: Parameters<LicenseEvents[E]>) => void)(...args);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
