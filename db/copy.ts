import { Readable } from 'node:stream';
import { createQueryId, PostgresQueryCompiler, type RawBuilder } from 'kysely';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { answerWithin, type DB, leaseConnection, type PoolOfHandle, poolOf } from './connection';

/*
 * A query's rows as PostgreSQL's binary COPY output (pg-copy-streams): a page read whole, or an
 * export streamed at its reader's pace. Each wait for output is limited (db/connection.ts); a COPY
 * stopped before its end (an error, a reader gone, an output that did not come) closes its
 * connection, which the pool replaces: a connection mid-COPY cannot serve another statement.
 */

/** An array as the text of a PostgreSQL array (each element quoted), for a literal of it. */
function arrayText(values: readonly unknown[]): string {
  const element = (value: unknown) => {
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
    if (typeof value === 'string') return `"${value.replace(/[\\"]/g, (character) => `\\${character}`)}"`;
    throw new Error(`no SQL array element for ${String(value)}`);
  };
  return `{${values.map(element).join(',')}}`;
}

/**
 * Kysely's compiler with the values written into the SQL text as literals (pg's escapeLiteral):
 * COPY takes no parameters. Negative numbers go in parentheses (`- -1` would start a comment). An
 * array is one literal of its text, whose type PostgreSQL takes from where it is used.
 */
class LiteralsCompiler extends PostgresQueryCompiler {
  protected override appendValue(value: unknown): void {
    if (typeof value === 'string') this.append(pg.escapeLiteral(value));
    else if (Array.isArray(value)) this.append(pg.escapeLiteral(arrayText(value)));
    else if (typeof value === 'number' && Number.isFinite(value)) this.append(value < 0 ? `(${value})` : String(value));
    else if (value instanceof Date) this.append(pg.escapeLiteral(value.toISOString()));
    else if (value === null || typeof value === 'boolean') this.append(String(value));
    else throw new Error(`no SQL literal for ${String(value)}`);
  }
}

/** The text of `COPY (query) TO STDOUT (FORMAT binary)`, its values written in as literals. */
export function binaryCopyStatement(query: RawBuilder<unknown>): string {
  return `copy (${new LiteralsCompiler().compileQuery(query.toOperationNode(), createQueryId()).sql}) to stdout (format binary)`;
}

/**
 * The COPY's output as it comes, each piece awaited at most `answerTimeoutMs`. `unlimited`: the
 * statement's time limit is lifted for the COPY (an export lasts as long as its reader takes) and
 * set again before its connection goes back to the pool.
 */
async function* copyOutput(source: PoolOfHandle, statement: string, unlimited: boolean): AsyncGenerator<Buffer> {
  const client = await leaseConnection(source);
  let completed = false;
  let failure: Error | undefined;
  try {
    const lifted = unlimited && source.statementTimeoutMs > 0;
    if (lifted) await client.query('set statement_timeout to 0');
    const copy = client.query(copyTo(statement));
    // Its errors reach this loop through the iterator; once the loop has left (a reader gone), the
    // connection's end may still fail the COPY, which nobody needs to hear.
    copy.on('error', () => undefined);
    const chunks = copy[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    while (true) {
      const next = await answerWithin(chunks.next(), source.answerTimeoutMs);
      if (next.done) break;
      yield next.value;
    }
    if (lifted) await client.query(`set statement_timeout to ${source.statementTimeoutMs}`);
    completed = true;
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    // pg-pool closes a connection released with an error instead of keeping it.
    client.release(completed ? undefined : (failure ?? new Error('COPY stopped before its end')));
  }
}

/**
 * An export's rows as PostgreSQL's binary COPY bytes, streamed at the reader's pace, outside the
 * statement time limit. The COPY's first bytes are awaited here: a failing statement rejects
 * before any answer is sent, never as a cut file. Destroying the stream stops the COPY.
 */
export async function copyOut(db: DB, query: RawBuilder<unknown>): Promise<Readable> {
  const output = copyOutput(poolOf(db), binaryCopyStatement(query), true);
  const first = await output.next();
  async function* fromFirst(): AsyncGenerator<Buffer> {
    if (first.done) return;
    yield first.value;
    yield* output;
  }
  const stream = Readable.from(fromFirst(), { objectMode: false });
  // Closed before it was read (a client gone at once), the COPY still ends.
  stream.once('close', () => void output.return(undefined));
  return stream;
}

/** A query's rows as PostgreSQL's whole binary COPY output (a page), under the statement time limit. */
export async function copyOutWhole(db: DB, query: RawBuilder<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of copyOutput(poolOf(db), binaryCopyStatement(query), false)) chunks.push(chunk);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}
