import { setTimeout as sleep } from 'node:timers/promises';
import { Kysely, type PostgresCursor, PostgresDialect, type PostgresPoolClient, type PostgresQueryResult, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './tables';

/*
 * The connection to PostgreSQL: the `DB` handle every query module takes first, Kysely over one pg
 * pool, with two time limits:
 * - PostgreSQL cancels a statement past `statement_timeout` (a pool option);
 * - this process stops waiting for an answer a second later (`answerWithin`), for a server that
 *   cannot even cancel (frozen, unreachable), and closes that connection: the statement stays in
 *   flight on it, and a partition keeps it open and silent for good.
 * The answer limit is this module's rather than pg's `query_timeout`, because pg arms that timer
 * for a pg-copy-streams COPY (pages and exports, db/copy.ts) and never clears it, failing the COPY
 * once the time has passed (tests/platform.database-timeouts.test.ts pins it); a COPY's limit is
 * on each wait for its output instead, since an export lasts as long as its reader takes.
 */

export type { Database } from './tables';
export type DB = Kysely<Database>;

// Counts (int8) and sums (numeric) as numbers, dates as the 'YYYY-MM-DD' text PostgreSQL sends:
// the default parsers return strings and shift dates into the process's time zone.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

/**
 * The settings of every session the API opens (pg's `options`, sent at connection start, so they
 * hold for each statement and COPY of the connection and need no statement of their own):
 * - no JIT: PostgreSQL decides to compile from the plan's estimated cost, which can run far past
 *   the rows an organisation's statement reads, and then compiles for longer than it runs;
 * - no parallel plan: an organisation that holds most of a table gets parallel scans of it instead
 *   of its range of an index, and an export streamed to a slow reader would hold the workers, idle
 *   on their queue to the leader, for the whole download;
 * - a random page read costed as the cached read it is (PostgreSQL's default of 4 prices a disk
 *   seek): otherwise an organisation that holds most of a table gets the whole table scanned
 *   rather than its range of an index (docs/performance.md, « Cost per organisation »).
 */
export const sessionOptions = '-c jit=off -c max_parallel_workers_per_gather=0 -c random_page_cost=1.1';

export interface PoolOptions {
  poolSize?: number;
  /** Connections kept open however long they stay idle (the others close after 10 s idle). */
  keptConnections?: number;
  /** Longest wait for a connection (a new one, or a free one of the pool). */
  connectTimeoutMs?: number;
  /**
   * Longest a statement may run: PostgreSQL cancels it (statement_timeout), and this process stops
   * waiting for its answer a second later.
   */
  queryTimeoutMs?: number;
  /** An idle connection the server closed (a restart): the pool drops it; this says so. */
  onConnectionLost?: (error: Error) => void;
}

/** What the pool has done so far: waits for a free connection, their time, and those that got none in time. */
export interface PoolUsage {
  waits: number;
  waitSeconds: number;
  refusals: number;
}

/** A handle's pool and its limits, for the statements that do not go through Kysely (db/copy.ts, runPrepared, db/health.ts). */
export interface PoolOfHandle {
  readonly pool: pg.Pool;
  readonly connectionString: string;
  readonly poolSize: number;
  /** Longest wait for a connection (0: none). */
  readonly connectTimeoutMs: number;
  readonly usage: PoolUsage;
  /** The pool's statement_timeout, which an export lifts while it streams (0: none). */
  readonly statementTimeoutMs: number;
  /** Longest wait for an answer, or for the next piece of a COPY's output (0: none). */
  readonly answerTimeoutMs: number;
}

const poolsOfHandles = new WeakMap<DB, PoolOfHandle>();

/** The pool of a handle made by createDb (a transaction's statements go through Kysely). */
export function poolOf(db: DB): PoolOfHandle {
  const pool = poolsOfHandles.get(db);
  if (pool === undefined) throw new Error('this needs a database handle made by createDb (not a transaction)');
  return pool;
}

/**
 * Every connection the pool could lend was lent for the whole wait: the server is busy, while the
 * database may well be fine (a 503 of its own, which the client may retry).
 */
export class ConnectionPoolExhausted extends Error {
  constructor(readonly waitedMs: number) {
    super(`no free connection in the pool within ${waitedMs} ms`);
    this.name = 'ConnectionPoolExhausted';
  }
}

/**
 * A connection of the handle's pool. A wait for one of the pool's connections to be free (all
 * lent) is counted in its usage, and one that gets none in time is ConnectionPoolExhausted; a
 * connection that cannot be opened in time is the database's fault, as pg reports it.
 */
export async function leaseConnection(handle: PoolOfHandle): Promise<pg.PoolClient> {
  const { pool, usage } = handle;
  if (pool.idleCount > 0 || pool.totalCount < handle.poolSize) return pool.connect();
  usage.waits += 1;
  const startedAt = performance.now();
  try {
    return await pool.connect();
  } catch (error) {
    if (!/timeout exceeded when trying to connect/.test((error as Error).message)) throw error;
    usage.refusals += 1;
    throw new ConnectionPoolExhausted(handle.connectTimeoutMs);
  } finally {
    usage.waitSeconds += (performance.now() - startedAt) / 1000;
  }
}

/** The error of an answer that did not come in time. */
export const answerTimeoutMessage = 'Query read timeout';

/** `answer`, or an error once `timeoutMs` have passed without it (0: no limit). */
export function answerWithin<T>(answer: Promise<T>, timeoutMs: number): Promise<T> {
  if (timeoutMs === 0) return answer;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(answerTimeoutMessage)), timeoutMs);
  });
  // An answer that comes after the limit is nobody's concern: its connection is closed.
  answer.catch(() => undefined);
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

const isAnswerTimeout = (error: unknown) => (error as Error | undefined)?.message === answerTimeoutMessage;

/**
 * A connection lent to Kysely, each answer awaited within the limit. Once one did not come, the
 * lease's later statements (a transaction's rollback) fail at once, and the connection goes back
 * to the pool with the error, which closes it.
 */
function leaseWithAnswerLimit(client: pg.PoolClient, answerTimeoutMs: number): PostgresPoolClient {
  let timedOut: Error | undefined;
  async function statement<R>(text: string, values: readonly unknown[]): Promise<PostgresQueryResult<R>> {
    if (timedOut) throw new Error(`${answerTimeoutMessage} earlier on this connection`);
    try {
      const result = await answerWithin(client.query(text, values as unknown[]), answerTimeoutMs);
      return { command: result.command as PostgresQueryResult<R>['command'], rowCount: result.rowCount ?? 0, rows: result.rows as R[] };
    } catch (error) {
      if (isAnswerTimeout(error)) timedOut = error as Error;
      throw error;
    }
  }
  function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  function query<R>(text: string, values: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  function query<R>(text: string | PostgresCursor<R>, values?: readonly unknown[]): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Rows are read whole, or as a COPY (db/copy.ts): Kysely's streams, which take a cursor, are not used.
    if (typeof text !== 'string') throw new Error('Kysely streams are not used: read rows whole, or as a COPY (db/copy.ts)');
    return statement<R>(text, values ?? []);
  }
  return {
    query,
    // pg-pool closes a connection released with an error instead of keeping it.
    release: () => client.release(timedOut),
  };
}

/** A statement prepared once per connection under its name (pg's `name` option), then only bound and run. */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

/**
 * Runs a prepared statement (not in a transaction): for the statements of every request whose
 * planning costs more than their run (docs/performance.md, « Prepared statements »). Their plan
 * must not depend on the parameters' values, since PostgreSQL may keep one generic plan.
 */
export async function runPrepared<Row>(db: DB, statement: PreparedStatement, values: unknown[]): Promise<Row[]> {
  const handle = poolOf(db);
  const client = await leaseConnection(handle);
  let failure: Error | undefined;
  try {
    const result = await answerWithin(client.query<Row & pg.QueryResultRow>({ ...statement, values }), handle.answerTimeoutMs);
    return result.rows;
  } catch (error) {
    if (isAnswerTimeout(error)) failure = error as Error;
    throw error;
  } finally {
    client.release(failure);
  }
}

const reportOnStderr = (error: Error) => {
  if (process.env.LOG_LEVEL !== 'silent') process.stderr.write(`[pg] connexion inactive perdue : ${error.message}\n`);
};

export function createDb(connectionString: string, options: PoolOptions = {}): DB {
  const { poolSize = 10, keptConnections = 0, connectTimeoutMs, queryTimeoutMs, onConnectionLost = reportOnStderr } = options;
  const answerTimeoutMs = queryTimeoutMs ? queryTimeoutMs + 1000 : 0;
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    min: keptConnections,
    application_name: 'partner-api',
    options: sessionOptions,
    // Keepalive probes from 10 s of silence instead of the system's 2 hours: an idle connection to
    // a server that vanished (a failover, a partition) is found dead in minutes, and replaced.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(connectTimeoutMs ? { connectionTimeoutMillis: connectTimeoutMs } : {}),
    ...(queryTimeoutMs ? { statement_timeout: queryTimeoutMs } : {}),
  });
  // An idle connection that the server closes (restart, failover) must not crash the process: the
  // pool drops it and opens a new one on the next query.
  pool.on('error', onConnectionLost);
  // A connection lost while lent fails its query (a 503); pg also emits it on the client, where
  // the pool listens only while the client is idle: unheard, that event would end the process.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const handle: PoolOfHandle = {
    pool,
    connectionString,
    poolSize,
    connectTimeoutMs: connectTimeoutMs ?? 0,
    usage: { waits: 0, waitSeconds: 0, refusals: 0 },
    statementTimeoutMs: queryTimeoutMs ?? 0,
    answerTimeoutMs,
  };
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () => leaseWithAnswerLimit(await leaseConnection(handle), answerTimeoutMs),
        end: () => pool.end(),
      },
    }),
  });
  poolsOfHandles.set(db, handle);
  return db;
}

/**
 * The session advisory locks under which server processes that start together take turns (each
 * number is this project's own, so that none is taken for another).
 */
export const advisoryLocks = {
  /** Creating pg-boss's delivery queue (db/webhooks.ts createDeliveryQueue). */
  deliveryQueueCreation: 1_702_112_617,
  /** A first start's demo organisation (src/local/demo.ts). */
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
