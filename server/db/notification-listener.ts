import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from './knex.js';

/**
 * How recently a ping of the listener connection must have started for the process to trust what
 * it keeps by notification. PostgreSQL sends a listening session every notification committed
 * before a query ahead of that query's answer, so once a ping started after a commit has come
 * back, its notification has been handled. A process whose connection silently broke, or whose
 * event loop stalled, stops trusting within this time; a sender waits this long at most.
 */
export const LISTENER_FRESH_MS = 2_000;
const PING_EVERY_MS = 400;
/** A ping unanswered this long means the connection is gone: drop it and connect again. */
const PING_TIMEOUT_MS = 5_000;
const RECONNECT_MS = 1_000;
/** How the listener connections of every process show in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'latchkey-listener';

export interface NotificationListener {
  /**
   * Connects in the background, and again whenever the connection is lost, until `stop`. Resolves
   * once listening and fresh (tests wait for it; a server need not: until then nothing is trusted).
   */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Handles every notification on `channel`: its payload and the process id of the session that sent it. */
  on(channel: string, handler: (payload: string, senderPid: number) => void): void;
  /** Called when the connection (re)starts: notifications may have been missed, so what was kept is stale. */
  onReset(handler: () => void): void;
  /** Whether every notification committed more than LISTENER_FRESH_MS ago has been handled. */
  isFresh(): boolean;
  /** Sends a notification from the listener's session (dropped while it is disconnected). */
  notify(channel: string, payload: string): void;
  /** Session process ids of the listeners of every server process on this database. */
  listenerPids(): Promise<number[]>;
}

/** One dedicated PostgreSQL session per process that LISTENs and pings, beside the query pool. */
export function createNotificationListener(db: Db, log: Logger): NotificationListener {
  const handlers = new Map<string, ((payload: string, senderPid: number) => void)[]>();
  const resetHandlers: (() => void)[] = [];
  let client: pg.Client | undefined;
  let stopped = true;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let pingTimer: NodeJS.Timeout | undefined;
  /** When the latest answered ping was sent (performance.now()); -Infinity before the first. */
  let freshSince = -Infinity;
  let pingSentAt: number | undefined;
  let markFresh: (() => void) | undefined;

  /** Closes the connection `current` if it is still the listener's; reconnects unless stopped. */
  function drop(current: pg.Client, err?: unknown): Promise<void> {
    if (client !== current) return Promise.resolve();
    client = undefined;
    freshSince = -Infinity;
    pingSentAt = undefined;
    clearInterval(pingTimer);
    const ended = current.end().catch(() => {});
    if (!stopped) {
      log.warn({ err }, 'notification listener disconnected; reconnecting');
      reconnectTimer = setTimeout(connect, RECONNECT_MS);
    }
    return ended;
  }

  function ping(current: pg.Client): void {
    const now = performance.now();
    if (pingSentAt !== undefined) {
      if (now - pingSentAt > PING_TIMEOUT_MS) void drop(current, new Error('ping unanswered'));
      return;
    }
    pingSentAt = now;
    current.query('SELECT 1').then(
      () => {
        if (client !== current) return;
        freshSince = now;
        pingSentAt = undefined;
        markFresh?.();
      },
      (err: unknown) => void drop(current, err),
    );
  }

  async function connect(): Promise<void> {
    const settings = (db.client as { connectionSettings: pg.ClientConfig }).connectionSettings;
    const current = new pg.Client({ ...settings, application_name: LISTENER_APPLICATION_NAME });
    current.on('error', (err) => void drop(current, err));
    current.on('end', () => void drop(current));
    current.on('notification', (n) => {
      for (const handler of handlers.get(n.channel) ?? []) handler(n.payload ?? '', n.processId);
    });
    client = current;
    try {
      await current.connect();
      for (const channel of handlers.keys()) await current.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      void drop(current, err);
      return;
    }
    if (client !== current) return;
    // Anything kept before this LISTEN may have missed a notification.
    for (const handler of resetHandlers) handler();
    ping(current);
    pingTimer = setInterval(() => ping(current), PING_EVERY_MS);
    pingTimer.unref();
  }

  return {
    start() {
      const fresh = new Promise<void>((resolve) => (markFresh = resolve));
      if (stopped) {
        stopped = false;
        void connect();
      }
      return fresh;
    },
    async stop() {
      stopped = true;
      clearTimeout(reconnectTimer);
      if (client) await drop(client);
    },
    on(channel, handler) {
      handlers.set(channel, [...(handlers.get(channel) ?? []), handler]);
    },
    onReset(handler) {
      resetHandlers.push(handler);
    },
    isFresh() {
      return performance.now() - freshSince < LISTENER_FRESH_MS;
    },
    notify(channel, payload) {
      client?.query('SELECT pg_notify($1, $2)', [channel, payload]).catch((err: unknown) => log.warn({ err }, 'notification not sent'));
    },
    async listenerPids() {
      const { rows } = await db.raw<{ rows: { pid: number }[] }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?`, [
        LISTENER_APPLICATION_NAME,
      ]);
      return rows.map((r) => r.pid);
    },
  };
}
