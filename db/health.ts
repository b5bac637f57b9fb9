import pg from 'pg';
import { answerWithin, type DB, poolOf, sessionOptions } from './connection';

/** Whether the database answers, asked on a connection of its own. */
export interface DatabaseProbe {
  /** True when the database answered `select 1` within the probe's time; probes asked meanwhile share the answer. */
  answers(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Asks the database on one connection kept for it, never one of the pool's: a busy server's
 * requests may hold every connection of the pool, and the database is not down for that. The
 * connection is opened at the first probe, and again after one that failed (the database
 * restarted, the network was cut).
 */
export function createDatabaseProbe(db: DB, timeoutMs: number): DatabaseProbe {
  const { connectionString } = poolOf(db);
  let client: pg.Client | null = null;
  let probing: Promise<boolean> | null = null;

  /** Closes the connection, waiting no longer than a probe: across a partition, its end never comes. */
  const drop = async () => {
    const dropped = client;
    client = null;
    if (dropped) await answerWithin(dropped.end(), timeoutMs).catch(() => undefined);
  };

  async function probe(): Promise<boolean> {
    try {
      if (client === null) {
        const opening = new pg.Client({
          connectionString,
          application_name: 'partner-api-health',
          options: sessionOptions,
          connectionTimeoutMillis: timeoutMs,
          keepAlive: true,
        });
        // A connection lost between probes is found by the next one.
        opening.on('error', () => undefined);
        client = opening;
        await opening.connect();
      }
      await answerWithin(client.query('select 1'), timeoutMs);
      return true;
    } catch {
      void drop();
      return false;
    }
  }

  return {
    answers() {
      probing ??= probe().finally(() => {
        probing = null;
      });
      return probing;
    },
    async close() {
      await probing;
      await drop();
    },
  };
}
