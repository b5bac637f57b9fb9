import type { Readable } from 'node:stream';
import { type CompiledQuery, type SelectQueryBuilder, sql } from 'kysely';
import { binaryCopyStatement, type CopiedBytes, copyOut, copyOutWhole, type Database, type DB } from '../connection';
import type { ResourceDefinition, ResourceFilter, RowWindow } from './definition';
import { textFieldsOf } from './rendering';

// Any resource's query: the machinery reads rows without caring for their shape.
type RowsQuery = SelectQueryBuilder<Database, any, any>;

export interface CountedRows {
  /** Rows the request works over: at most the cap. */
  total: number;
  /** More rows matched than the cap. */
  truncated: boolean;
}

/**
 * Counts the rows, reading at most cap + 1 of them (cap null: no cap, for one learner). Order and
 * columns do not change a count: both are dropped, so per-row lookups in the select list cost
 * nothing here. (Also run by the bare server of the users benchmark.)
 */
export function countQuery(query: RowsQuery, cap: number | null) {
  const bare = query.clearSelect().clearOrderBy().select(sql<number>`1`.as('one'));
  const bounded = cap === null ? bare : bare.limit(cap + 1);
  return sql<{ n: number }>`select count(*)::int as n from (${bounded}) as counted`;
}

/** The page a request may read: `limit` rows from `offset`, never past the cap (null: nothing). */
export function allowedWindow(limit: number, offset: number, cap: number | null): RowWindow | null {
  const allowed = cap === null ? limit : Math.min(limit, cap - offset);
  return allowed > 0 ? { limit: allowed, offset } : null;
}

/**
 * Compiled statements, kept per database handle. Building and compiling a resource's query with
 * Kysely costs more JavaScript per request than reading its page, and clients poll the same filters
 * again and again. Queries are pure functions of the resource, the filter and the window, which
 * make the key: a hit is the very same SQL with the very same parameters.
 */
const compiledStatements = new WeakMap<DB, Map<string, unknown>>();
const compiledStatementsKept = 1000;

function compiledOnce<Statement>(db: DB, key: string, compile: () => Statement): Statement {
  let statements = compiledStatements.get(db);
  if (!statements) {
    statements = new Map();
    compiledStatements.set(db, statements);
  }
  let compiled = statements.get(key) as Statement | undefined;
  if (compiled === undefined) {
    compiled = compile();
    // The oldest entry goes first (a Map keeps insertion order).
    if (statements.size >= compiledStatementsKept) statements.delete(statements.keys().next().value!);
    statements.set(key, compiled);
  }
  return compiled;
}

/** The query of one page of a resource: built for the page alone when the resource knows how. */
function pageQuery(db: DB, definition: ResourceDefinition, filter: ResourceFilter, window: RowWindow): RowsQuery {
  return definition.selectWindow
    ? definition.selectWindow(db, filter, window)
    : definition.select(db, filter).limit(window.limit).offset(window.offset);
}

/**
 * One page of a resource, never past the cap, as PostgreSQL's binary COPY of its rows' text fields
 * (rendering.ts): the bytes src/json-rows.ts writes the JSON page from, as an export's are written
 * into a CSV, with their digest. Null when the window is empty (past the cap).
 */
export async function copyResourcePage(
  db: DB,
  definition: ResourceDefinition,
  filter: ResourceFilter,
  limit: number,
  offset: number,
  cap: number | null,
): Promise<CopiedBytes | null> {
  const window = allowedWindow(limit, offset, cap);
  if (window === null) return null;
  const statement = compiledOnce(db, `${definition.name} page ${JSON.stringify(filter)} ${window.limit} ${window.offset}`, () =>
    binaryCopyStatement(textFieldsOf(definition, pageQuery(db, definition, filter, window))),
  );
  return copyOutWhole(db, statement);
}

/** Counts a resource's rows: its own count, else on its keys, else on its rows. */
export async function countResourceRows(
  db: DB,
  definition: ResourceDefinition,
  filter: ResourceFilter,
  cap: number | null,
): Promise<CountedRows> {
  const n = definition.count
    ? await definition.count(db, filter)
    : (
        await db.executeQuery(
          compiledOnce(
            db,
            `${definition.name} count ${JSON.stringify(filter)} ${cap}`,
            (): CompiledQuery<{ n: number }> =>
              countQuery(definition.keys ? definition.keys(db, filter) : definition.select(db, filter), cap).compile(db),
          ),
        )
      ).rows[0]!.n;
  return cap !== null && n > cap ? { total: cap, truncated: true } : { total: n, truncated: false };
}

const rowsPerRead = 1000;

/**
 * Every row up to the cap, in chunks read through a cursor so memory stays flat whatever the
 * volume. The next chunk is asked for as soon as one arrives, so PostgreSQL produces it while the
 * caller writes this one (an export was otherwise idle a third of its time, waiting on each read).
 */
export async function* streamRowChunks(db: DB, query: RowsQuery, cap: number | null): AsyncGenerator<Record<string, unknown>[]> {
  const chunks = db
    .getExecutor()
    .stream<Record<string, unknown>>((cap === null ? query : query.limit(cap)).compile(), rowsPerRead)
    [Symbol.asyncIterator]();
  let next = chunks.next();
  try {
    while (true) {
      const chunk = await next;
      if (chunk.done) return;
      next = chunks.next();
      yield chunk.value.rows;
    }
  } finally {
    // Stopped early (the client went away): the read in flight settles, then the cursor closes
    // and its connection returns to the pool.
    next.catch(() => undefined);
    await chunks.return?.(undefined);
  }
}

/**
 * Every row up to the cap, in the order of the pages, as PostgreSQL's binary COPY of their text
 * fields (rendering.ts): the bytes an export writes (src/csv.ts), with flat memory whatever the
 * volume, at the reader's pace (copyOut).
 */
export function copyResourceRows(db: DB, definition: ResourceDefinition, filter: ResourceFilter, cap: number | null): Promise<Readable> {
  const rows = definition.select(db, filter);
  return copyOut(db, textFieldsOf(definition, cap === null ? rows : rows.limit(cap)));
}
