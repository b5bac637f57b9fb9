import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createQueryId, Kysely, PostgresDialect, PostgresQueryCompiler, type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
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

/** The error of a statement whose answer did not come in time (pg's wording for its own `query_timeout`). */
const readTimeoutMessage = 'Query read timeout';

/**
 * pg-cursor, for Kysely's streams (CSV exports), with a time limit on each read rather than on the
 * whole stream: an export to a slow reader may last minutes, each chunk must come within the limit.
 * (PostgreSQL's statement_timeout runs from a portal's first read to its last, so the client lifts
 * it for the cursor and sets it again on close.) On a read past the limit it has the client give
 * its connection up, and its `close` then returns at once: pg-cursor would wait for the server's
 * ReadyForQuery forever, and the stream would never hand its connection back to the pool.
 */
class StreamCursor<Row = any> extends Cursor<Row> {
  /** Set by the client the cursor is submitted to: its answer time limit, how it gives up, what it does once closed. */
  readTimeoutMs = 0;
  onReadTimeout: (() => void) | undefined;
  afterClose: (() => Promise<unknown>) | undefined;

  override read(rows: number, callback?: any): any {
    if (callback !== undefined || this.readTimeoutMs === 0) return super.read(rows, callback);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        this.onReadTimeout?.();
        reject(new Error(readTimeoutMessage));
      }, this.readTimeoutMs);
    });
    return Promise.race([super.read(rows), late]).finally(() => clearTimeout(timer));
  }

  override close(callback?: (err: Error) => void): any {
    const connection = (this as unknown as { connection: { stream: { destroyed: boolean } } | null }).connection;
    if (connection?.stream.destroyed && callback === undefined) return Promise.resolve();
    if (callback !== undefined) return super.close(callback);
    return super.close().then(() => this.afterClose?.());
  }
}

/** What a database handle made by createDb keeps for its COPY exports: its pool and time limits. */
interface CopyHandle {
  pool: pg.Pool;
  statementTimeoutMs: number;
  readTimeoutMs: number;
}
const poolsOfHandles = new WeakMap<DB, CopyHandle>();

/**
 * Kysely's compiler with the values written into the SQL text as literals: COPY takes no
 * parameters. Text as escaped strings, negative numbers in parentheses (`- -1` would be a comment).
 */
class LiteralsCompiler extends PostgresQueryCompiler {
  protected override appendValue(value: unknown): void {
    if (typeof value === 'string') {
      this.append(`E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`);
    } else if (typeof value === 'number' || typeof value === 'bigint') {
      if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`no SQL literal for ${value}`);
      this.append(value < 0 ? `(${value})` : String(value));
    } else if (value instanceof Date) {
      this.appendValue(value.toISOString());
    } else if (value === null || typeof value === 'boolean') {
      this.append(String(value));
    } else {
      throw new Error(`no SQL literal for a ${typeof value}`);
    }
  }
}

/**
 * The bytes of a `COPY … TO STDOUT` on a connection of its own, read at the reader's pace. Each wait
 * for PostgreSQL's output is limited (only while the reader wants more, so a slow reader is never
 * cut); statement_timeout is lifted for the COPY (it would run over the whole export) and set back
 * on release. Stopped before its end (the client left, an output came too late, an error), the
 * connection is closed and the pool opens a fresh one: a cancel sent from another connection could
 * land on the next statement of a reused one.
 */
class CopyOutStream extends Readable {
  readonly #chunks: AsyncIterator<Buffer>;
  readonly #release: (error?: Error) => Promise<void>;
  readonly #readTimeoutMs: number;
  #complete = false;
  #reading = false;

  private constructor(chunks: AsyncIterator<Buffer>, release: (error?: Error) => Promise<void>, readTimeoutMs: number) {
    super();
    this.#chunks = chunks;
    this.#release = release;
    this.#readTimeoutMs = readTimeoutMs;
  }

  /** Opens the COPY and waits for its first bytes: a failing statement rejects here, before any answer is sent. */
  static async open(handle: CopyHandle, statement: string): Promise<CopyOutStream> {
    const client = await handle.pool.connect();
    let released = false;
    const release = async (error?: Error) => {
      if (released) return;
      released = true;
      let failure = error;
      if (failure === undefined && handle.statementTimeoutMs > 0) {
        await client.query(`set statement_timeout to ${handle.statementTimeoutMs}`).catch((cause: Error) => {
          failure = cause;
        });
      }
      // With an error, pg-pool closes the connection instead of keeping it.
      client.release(failure);
    };
    try {
      if (handle.statementTimeoutMs > 0) await client.query('set statement_timeout to 0');
      const copy = client.query(copyTo(statement));
      // Its errors reach the reader through the iterator.
      copy.on('error', () => undefined);
      const stream = new CopyOutStream(copy[Symbol.asyncIterator]() as AsyncIterator<Buffer>, release, handle.readTimeoutMs);
      const first = await stream.#next();
      stream.push(first.done ? null : first.value);
      return stream;
    } catch (error) {
      await release(error as Error);
      throw error;
    }
  }

  async #next(): Promise<IteratorResult<Buffer>> {
    const next = this.#chunks.next();
    next.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      if (this.#readTimeoutMs > 0) timer = setTimeout(() => reject(new Error(readTimeoutMessage)), this.#readTimeoutMs);
    });
    try {
      const result = await Promise.race([next, late]);
      if (result.done) {
        this.#complete = true;
        await this.#release();
      }
      return result;
    } finally {
      clearTimeout(timer);
    }
  }

  override _read(): void {
    if (this.#reading) return;
    this.#reading = true;
    this.#next().then(
      (result) => {
        this.#reading = false;
        this.push(result.done ? null : result.value);
      },
      (error: Error) => this.destroy(error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.#complete) {
      callback(error);
      return;
    }
    this.#release(error ?? new Error('COPY stopped before its end')).finally(() => callback(error));
  }
}

/** The text of `COPY (query) TO STDOUT (FORMAT binary)`, its values written in as literals. */
export function binaryCopyStatement(query: RawBuilder<unknown>): string {
  return `copy (${new LiteralsCompiler().compileQuery(query.toOperationNode(), createQueryId()).sql}) to stdout (format binary)`;
}

function copyHandleOf(db: DB): CopyHandle {
  const handle = poolsOfHandles.get(db);
  if (handle === undefined) throw new Error('COPY needs a database handle made by createDb (not a transaction)');
  return handle;
}

/** A query's rows as PostgreSQL's binary COPY bytes, streamed (CSV and workbook exports). */
export async function copyOut(db: DB, query: RawBuilder<unknown>): Promise<Readable> {
  return CopyOutStream.open(copyHandleOf(db), binaryCopyStatement(query));
}

/** A binary COPY's whole output, with its SHA-256 (a page's ETag stands on it). */
export interface CopiedBytes {
  bytes: Buffer;
  sha256: Buffer;
}

/**
 * The whole output of a binary COPY statement (binaryCopyStatement) of few rows (a JSON page), on a
 * pooled connection and under the time limits of any statement: PostgreSQL's bytes, which this
 * process neither parses into row objects nor decodes into strings, and their digest.
 */
export async function copyOutWhole(db: DB, statement: string): Promise<CopiedBytes> {
  const client = (await copyHandleOf(db).pool.connect()) as unknown as PreparingClient & pg.PoolClient;
  try {
    const copied = await client.copyWhole(statement);
    client.release();
    return copied;
  } catch (error) {
    // As pg-pool's own query does: a connection whose statement failed is closed, not reused.
    client.release(error as Error);
    throw error;
  }
}

/** Bytes hashed at a time: few calls, and little left to hash once the last byte arrives. */
const hashedPerStep = 16 * 1024;

/**
 * A COPY … TO STDOUT of a few rows (a page), read whole through pg's own message parser: each
 * CopyData message's bytes are copied into one buffer as they come. pg-copy-streams, for the
 * streamed exports, takes the socket from pg and back through Node's stream machinery, which cost
 * a 100-row page more than its rows (perf, users benchmark).
 *
 * The bytes are hashed as they arrive, a step at a time, while PostgreSQL still sends the rest: the
 * page's ETag is ready with its last byte. Hashed after the COPY on libuv's pool instead, a
 * 1,000-row page's 370 kB made its answer 0.3 ms later at the median (10 of the 12 large pages),
 * and up to 2.5 ms when the pool's thread waited for a core that PostgreSQL's backends held.
 */
class WholeCopyQuery {
  #bytes = Buffer.allocUnsafe(16 * 1024);
  #length = 0;
  #hash = createHash('sha256');
  #hashedUpTo = 0;
  #done: ((error: Error | null, copied?: CopiedBytes) => void) | undefined;

  constructor(
    readonly text: string,
    done: (error: Error | null, copied?: CopiedBytes) => void,
  ) {
    this.#done = done;
  }

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  /** A message's bytes are a view of pg's read buffer, which it reuses: they are copied at once. */
  handleCopyData(message: { chunk: Buffer }): void {
    const chunk = message.chunk;
    if (this.#length + chunk.length > this.#bytes.length) {
      const larger = Buffer.allocUnsafe(Math.max(2 * this.#bytes.length, this.#length + chunk.length));
      this.#bytes.copy(larger, 0, 0, this.#length);
      this.#bytes = larger;
    }
    this.#length += chunk.copy(this.#bytes, this.#length);
    if (this.#length - this.#hashedUpTo >= hashedPerStep) this.#hashArrived();
  }

  handleReadyForQuery(): void {
    this.#hashArrived();
    this.#finish(null, { bytes: this.#bytes.subarray(0, this.#length), sha256: this.#hash.digest() });
  }

  #hashArrived(): void {
    this.#hash.update(this.#bytes.subarray(this.#hashedUpTo, this.#length));
    this.#hashedUpTo = this.#length;
  }

  /** An error from PostgreSQL (pg then sends no ReadyForQuery here) or the connection's loss. */
  handleError(error: Error): void {
    this.#finish(error);
  }

  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(connection: { sendCopyFail(message: string): void }): void {
    connection.sendCopyFail('COPY FROM STDIN non prévu');
  }

  #finish(error: Error | null, copied?: CopiedBytes): void {
    const done = this.#done;
    this.#done = undefined;
    done?.(error, copied);
  }
}

/** The pool's options as each client receives them; `answer_timeout` is ours, not pg's. */
type ClientOptions = pg.ClientConfig & { answer_timeout?: number; statement_timeout?: number };

/** A statement sent and not yet answered: when, and how to fail it. */
interface AwaitedAnswer {
  sentAt: number;
  fail(error: Error): void;
}

/**
 * pg's client, naming the statements that carry the marker (Kysely passes SQL text and values),
 * limiting the time each answer may take, and giving up its connection when one does not come.
 */
class PreparingClient extends pg.Client {
  /** Whether this client ended its connection after a read timeout: later queries fail at once. */
  #givenUp = false;
  /** How long an answer may take; a cursor applies it to each of its reads instead. */
  readonly #answerTimeoutMs: number;
  readonly #statementTimeoutMs: number;
  /** The statements sent and not yet answered, oldest first (pg answers them in order). */
  readonly #awaited: AwaitedAnswer[] = [];
  /** Armed while statements are awaited: one timer per connection, not one per statement. */
  #watchdog: NodeJS.Timeout | undefined;

  constructor(config: ClientOptions = {}) {
    super(config);
    this.#answerTimeoutMs = config.answer_timeout ?? 0;
    this.#statementTimeoutMs = config.statement_timeout ?? 0;
    // A connection lost while the client is lent (PostgreSQL restarting or crashing, a reset) fails
    // the query in flight, which answers 503; pg also emits it here, where the pool listens only
    // while the client is idle: unheard, that event would end the process.
    this.on('error', () => undefined);
  }

  /** Kysely calls it with SQL text and values (answered by a promise), or with a cursor (streams). */
  override query(...args: any[]): any {
    const [text, values] = args;
    if (text instanceof StreamCursor) {
      text.readTimeoutMs = this.#answerTimeoutMs;
      text.onReadTimeout = () => this.giveUp();
      if (this.#statementTimeoutMs > 0) {
        // Queued before the cursor, and the connection's limit set again before it is released.
        super.query('set statement_timeout to 0').catch(() => undefined);
        text.afterClose = () => super.query(`set statement_timeout to ${this.#statementTimeoutMs}`).catch(() => undefined);
      }
      return super.query(text);
    }
    if (typeof text !== 'string') return (super.query as (...rest: any[]) => any)(...args);
    // A later statement of the same lease (a transaction's rollback) fails at once, as a database
    // fault ('Connection terminated': 503) rather than pg's 'Client was closed'.
    if (this.#givenUp) return Promise.reject(new Error('Connection terminated after a query read timeout'));
    // Only the statements that carry the marker are prepared: a generic plan, which PostgreSQL
    // adopts for a prepared statement after five runs, made some pages three times slower
    // (attendance's first page: 34 -> 112 ms), so the pages keep being planned for their values.
    const name = text.startsWith('/* prepared:') ? preparedStatementMarker.exec(text)?.[1] : undefined;
    // Answered through pg's callback, and timed by the connection's watchdog: pg's own promise and
    // its per-query `query_timeout` timer each kept every result reachable from older objects, so
    // that each page's rows outlived young-generation collections and were copied to the old one
    // (2 MB per collection under load, measured: the server spent a third of its time collecting).
    return new Promise((resolve, reject) => {
      const awaited: AwaitedAnswer = { sentAt: performance.now(), fail: reject };
      this.#await(awaited);
      const answered = (error: Error | null, result: unknown) => {
        this.#answered(awaited);
        if (error) reject(error);
        else resolve(result);
      };
      // Text and values as they come (pg copies a config object on every query).
      if (name === undefined) super.query(text, values, answered);
      else super.query({ name, text, values }, answered);
    });
  }

  /** The whole output of a COPY … TO STDOUT, under the same answer time limit as a statement. */
  copyWhole(statement: string): Promise<CopiedBytes> {
    if (this.#givenUp) return Promise.reject(new Error('Connection terminated after a query read timeout'));
    return new Promise((resolve, reject) => {
      const awaited: AwaitedAnswer = { sentAt: performance.now(), fail: reject };
      this.#await(awaited);
      super.query(
        new WholeCopyQuery(statement, (error, copied) => {
          this.#answered(awaited);
          if (error) reject(error);
          else resolve(copied!);
        }),
      );
    });
  }

  #await(awaited: AwaitedAnswer): void {
    this.#awaited.push(awaited);
    if (this.#answerTimeoutMs > 0 && this.#watchdog === undefined) this.#armWatchdog(this.#answerTimeoutMs);
  }

  #answered(awaited: AwaitedAnswer): void {
    const index = this.#awaited.indexOf(awaited);
    if (index >= 0) this.#awaited.splice(index, 1);
  }

  #armWatchdog(delayMs: number): void {
    this.#watchdog = setTimeout(() => this.#checkAnswers(), delayMs);
    this.#watchdog.unref();
  }

  /** When the oldest awaited answer is late, every statement of the connection fails, and it is given up. */
  #checkAnswers(): void {
    this.#watchdog = undefined;
    const oldest = this.#awaited[0];
    if (oldest === undefined) return;
    const waitedMs = performance.now() - oldest.sentAt;
    if (waitedMs < this.#answerTimeoutMs) {
      this.#armWatchdog(this.#answerTimeoutMs - waitedMs);
      return;
    }
    for (const awaited of this.#awaited.splice(0)) awaited.fail(new Error(readTimeoutMessage));
    this.giveUp();
  }

  /**
   * After a read timeout pg keeps the query pending and queues every later one behind it, so the
   * connection would fail each request it is lent to, for as long as it stays open (a partition, a
   * failover: the server's answer never comes). Ending it now (pg destroys the socket of a client
   * with a query in flight) makes the pool drop it when it is released and open a new one.
   */
  private giveUp(): void {
    if (this.#givenUp) return;
    this.#givenUp = true;
    this.end().catch(() => undefined);
  }
}

export interface PoolOptions {
  poolSize?: number;
  /**
   * Connections kept open however long they stay idle (the others close after 10 s idle, pg-pool's
   * default). Not opened by the pool: db/warm-up.ts opens them.
   */
  keptConnections?: number;
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
  const { poolSize = 10, keptConnections = 0, connectTimeoutMs, queryTimeoutMs, onConnectionLost = reportOnStderr } = options;
  const poolOptions: pg.PoolConfig & ClientOptions = {
    connectionString,
    max: poolSize,
    min: keptConnections,
    application_name: 'partner-api',
    Client: PreparingClient,
    // Keepalive probes from 10 s of silence instead of the system's 2 hours: an idle connection to
    // a server that vanished (a failover, a partition) is found dead in minutes, and replaced.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(connectTimeoutMs ? { connectionTimeoutMillis: connectTimeoutMs } : {}),
    ...(queryTimeoutMs ? { statement_timeout: queryTimeoutMs, answer_timeout: queryTimeoutMs + 1000 } : {}),
  };
  const pool = new pg.Pool(poolOptions);
  // An idle connection that the server closes (restart, failover) must not crash the process: the
  // pool drops it and opens a new one on the next query.
  pool.on('error', onConnectionLost);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool, cursor: StreamCursor }) });
  poolsOfHandles.set(db, {
    pool,
    statementTimeoutMs: queryTimeoutMs ?? 0,
    readTimeoutMs: queryTimeoutMs ? queryTimeoutMs + 1000 : 0,
  });
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
