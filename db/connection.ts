import { setTimeout as sleep } from 'node:timers/promises';
import { Kysely, type PostgresCursor, PostgresDialect, type PostgresPoolClient, type PostgresQueryResult, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './tables';

/*
 * The connection to PostgreSQL: the `DB` handle every query module takes first. It holds two pools
 * on the same database, configured with pg's and PostgreSQL's own time limits:
 * - the statements' pool, behind Kysely: `statement_timeout` (PostgreSQL cancels a statement) and
 *   `query_timeout` (pg stops waiting for an answer a second later, when the server cannot even
 *   cancel: frozen, unreachable);
 * - the COPY pool, for the pages and exports read as PostgreSQL's binary COPY (db/copy.ts): the
 *   same `statement_timeout`, but no `query_timeout`, which pg applies to a whole query and which
 *   fires on pg-copy-streams' COPY even after it ended; db/copy.ts limits each wait for output
 *   instead, since an export to a slow reader lasts as long as its reader takes.
 */

export type { Database } from './tables';
export type DB = Kysely<Database>;

// Counts (int8) and sums (numeric) as numbers, dates as the 'YYYY-MM-DD' text PostgreSQL sends:
// the default parsers return strings and shift dates into the process's time zone.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

export interface PoolOptions {
  /** Connections of each pool at most. */
  poolSize?: number;
  /** Connections of the statements' pool kept open however long they stay idle (the others close after 10 s idle). */
  keptConnections?: number;
  /** Longest wait for a connection (a new one, or a free one of the pool). */
  connectTimeoutMs?: number;
  /**
   * Longest a statement may run: PostgreSQL cancels it (statement_timeout), and pg stops waiting a
   * second later (query_timeout), for a server that cannot even cancel.
   */
  queryTimeoutMs?: number;
  /** An idle connection the server closed (a restart): the pool drops it; this says so. */
  onConnectionLost?: (error: Error) => void;
}

/** What db/copy.ts needs of a handle: its COPY pool and how long a wait for output may last. */
export interface CopySource {
  readonly pool: pg.Pool;
  /** The pool's statement_timeout, which an export lifts while it streams (0: none). */
  readonly statementTimeoutMs: number;
  /** Longest wait for the next piece of a COPY's output (0: none). */
  readonly answerTimeoutMs: number;
}

const copySources = new WeakMap<DB, CopySource>();
const statementPools = new WeakMap<DB, pg.Pool>();

/** A statement prepared once per connection under its name (pg's `name` option), then only bound and run. */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

/**
 * Runs a prepared statement on the handle's statements pool (not in a transaction). For the
 * statements of every request whose planning costs more than their run: docs/performance.md,
 * « Prepared statements ». Their plan must not depend on the parameters' values, since PostgreSQL
 * may keep one generic plan. pg-pool closes the connection of a statement that failed, the answer
 * limit's included.
 */
export async function runPrepared<Row>(db: DB, statement: PreparedStatement, values: unknown[]): Promise<Row[]> {
  const pool = statementPools.get(db);
  if (pool === undefined) throw new Error('a prepared statement needs a database handle made by createDb (not a transaction)');
  return (await pool.query<Row & pg.QueryResultRow>({ name: statement.name, text: statement.text, values })).rows;
}

/** The COPY pool of a handle made by createDb (a transaction has none: COPY runs outside it). */
export function copySourceOf(db: DB): CopySource {
  const source = copySources.get(db);
  if (source === undefined) throw new Error('COPY needs a database handle made by createDb (not a transaction)');
  return source;
}

/** pg's error when its query_timeout passed without an answer. */
const answerTimeoutMessage = 'Query read timeout';

/**
 * A connection lent to Kysely, given back to the pool to be closed once a statement's answer did
 * not come in time: pg stops waiting, but the statement stays in flight on the connection and every
 * later one waits behind it, for as long as the server is frozen or cut off (a partition keeps a
 * connection open and silent for good). Its later statements on this lease (a transaction's
 * rollback) fail at once.
 */
function leaseDroppedAfterTimeout(client: pg.PoolClient): PostgresPoolClient {
  let timedOut: Error | undefined;
  async function statement<R>(text: string, values: readonly unknown[]): Promise<PostgresQueryResult<R>> {
    if (timedOut) throw new Error(`${answerTimeoutMessage} earlier on this connection`);
    try {
      const result = await client.query(text, values as unknown[]);
      return { command: result.command as PostgresQueryResult<R>['command'], rowCount: result.rowCount ?? 0, rows: result.rows as R[] };
    } catch (error) {
      if ((error as Error).message === answerTimeoutMessage) timedOut = error as Error;
      throw error;
    }
  }
  function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  function query<R>(text: string, values: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  function query<R>(text: string | PostgresCursor<R>, values?: readonly unknown[]): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Rows are read whole or as a COPY (db/copy.ts): Kysely's streams, which take a cursor, are not used.
    if (typeof text !== 'string') throw new Error('Kysely streams are not used: read rows whole, or as a COPY (db/copy.ts)');
    return statement<R>(text, values ?? []);
  }
  return {
    query,
    // pg-pool closes a connection released with an error instead of keeping it.
    release: () => client.release(timedOut),
  };
}

const reportOnStderr = (error: Error) => {
  if (process.env.LOG_LEVEL !== 'silent') process.stderr.write(`[pg] connexion inactive perdue : ${error.message}\n`);
};

export function createDb(connectionString: string, options: PoolOptions = {}): DB {
  const { poolSize = 10, keptConnections = 0, connectTimeoutMs, queryTimeoutMs, onConnectionLost = reportOnStderr } = options;
  const answerTimeoutMs = queryTimeoutMs ? queryTimeoutMs + 1000 : 0;
  const common: pg.PoolConfig = {
    connectionString,
    max: poolSize,
    application_name: 'partner-api',
    // Keepalive probes from 10 s of silence instead of the system's 2 hours: an idle connection to
    // a server that vanished (a failover, a partition) is found dead in minutes, and replaced.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(connectTimeoutMs ? { connectionTimeoutMillis: connectTimeoutMs } : {}),
    ...(queryTimeoutMs ? { statement_timeout: queryTimeoutMs } : {}),
  };
  const statements = new pg.Pool({
    ...common,
    min: keptConnections,
    ...(answerTimeoutMs ? { query_timeout: answerTimeoutMs } : {}),
  });
  const copies = new pg.Pool({ ...common, application_name: 'partner-api-copy' });
  for (const pool of [statements, copies]) {
    // An idle connection that the server closes (restart, failover) must not crash the process:
    // the pool drops it and opens a new one on the next query.
    pool.on('error', onConnectionLost);
    // A connection lost while lent fails its query (a 503); pg also emits it on the client, where
    // the pool listens only while the client is idle: unheard, that event would end the process.
    pool.on('connect', (client) => client.on('error', () => undefined));
  }
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () => leaseDroppedAfterTimeout(await statements.connect()),
        // Kysely's destroy ends both pools.
        end: async () => {
          await Promise.all([statements.end(), copies.end()]);
        },
      },
    }),
  });
  statementPools.set(db, statements);
  copySources.set(db, { pool: copies, statementTimeoutMs: queryTimeoutMs ?? 0, answerTimeoutMs });
  return db;
}

/**
 * The session advisory locks under which server processes that start together take turns (each
 * number is this project's own, so that none is taken for another).
 */
export const advisoryLocks = {
  /** Creating pg-boss's delivery queue (db/webhooks.ts createDeliveryQueue). */
  deliveryQueueCreation: 1_702_112_617,
  /** A first start's demo organisation (src/demo.ts). */
  demoSeed: 1_702_112_618,
} as const;

/**
 * Runs `action` while this process holds the session advisory lock `lock`, on a connection of
 * `db`'s pool kept for it (so the action needs another: not for a pool of one). The lock is asked
 * with pg_try_advisory_lock every 50 ms rather than waited for in one statement, which the
 * statement time limit would end while another process takes its turn (a demo's seeding takes
 * seconds). A process that dies releases its lock with its connection.
 */
export async function withAdvisoryLock<T>(db: DB, lock: number, action: () => Promise<T>): Promise<T> {
  return db.connection().execute(async (connection) => {
    const tryLock = sql<{ locked: boolean }>`select pg_try_advisory_lock(${sql.lit(lock)}) as locked`;
    while (!(await tryLock.execute(connection)).rows[0]!.locked) await sleep(50);
    try {
      return await action();
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(lock)})`.execute(connection);
    }
  });
}
