import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import Cursor from 'pg-cursor';
import type { Database } from './tables';

/*
 * The connection to PostgreSQL: the `DB` handle every query module takes first, and its pool with
 * the parsers, prepared statements and time limits the queries rely on.
 */

export type { Database } from './tables';
export type DB = Kysely<Database>;

// Counts (int8) and sums (numeric) as numbers, dates as the 'YYYY-MM-DD' text PostgreSQL sends:
// the default parsers return strings and shift dates into the process's time zone.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

/**
 * A statement whose SQL starts with this comment, `/* prepared:name *\/ select ...`, is prepared
 * once per connection under that name and then only bound and executed: for the statements of every
 * request (the key lookup), whose planning costs more than running them. Their plan must not depend
 * on the parameters' values, since PostgreSQL may keep one generic plan.
 */
export const preparedStatementMarker = /^\/\* prepared:([a-z_]+) \*\//;

/** pg's client, naming the statements that carry the marker (Kysely passes SQL text and values). */
class PreparingClient extends pg.Client {
  override query(...args: any[]): any {
    const [text, values] = args;
    const name = typeof text === 'string' && text.startsWith('/* prepared:') ? preparedStatementMarker.exec(text)?.[1] : undefined;
    if (name !== undefined && args.length === 2) return super.query({ name, text, values });
    return (super.query as (...rest: any[]) => any)(...args);
  }
}

export interface PoolOptions {
  poolSize?: number;
  /** Longest wait for a connection (a new one, or a free one of the pool). */
  connectTimeoutMs?: number;
  /**
   * Longest a statement may run: PostgreSQL cancels it (statement_timeout), and this process stops
   * waiting a second later, for a server that cannot even cancel (frozen, unreachable).
   */
  queryTimeoutMs?: number;
  /** An idle connection the server closed (a restart): the pool drops it; this says so. */
  onConnectionLost?: (error: Error) => void;
}

const reportOnStderr = (error: Error) => {
  if (process.env.LOG_LEVEL !== 'silent') process.stderr.write(`[pg] connexion inactive perdue : ${error.message}\n`);
};

export function createDb(connectionString: string, options: PoolOptions = {}): DB {
  const { poolSize = 10, connectTimeoutMs, queryTimeoutMs, onConnectionLost = reportOnStderr } = options;
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    application_name: 'partner-api',
    Client: PreparingClient,
    keepAlive: true,
    ...(connectTimeoutMs ? { connectionTimeoutMillis: connectTimeoutMs } : {}),
    ...(queryTimeoutMs ? { statement_timeout: queryTimeoutMs, query_timeout: queryTimeoutMs + 1000 } : {}),
  });
  // An idle connection that the server closes (restart, failover) must not crash the process: the
  // pool drops it and opens a new one on the next query.
  pool.on('error', onConnectionLost);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool, cursor: Cursor }) });
}
