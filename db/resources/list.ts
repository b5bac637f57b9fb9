import type { Readable } from 'node:stream';
import { type SelectQueryBuilder, sql } from 'kysely';
import type { Database, DB } from '../connection';
import { copyOut, copyOutWhole } from '../copy';
import type { PageKey, ResourceDefinition, ResourceFilter, RowWindow } from './definition';
import { textFieldsOf } from './rendering';
import { rowsWithKeys } from './scope';

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

/** Reads a page's keys: the statement's rows, one column each. */
export type KeysReader = (keysQuery: RowsQuery) => Promise<readonly Record<string, unknown>[]>;

const executeKeys: KeysReader = (keysQuery) => keysQuery.execute();

/**
 * The query of one page of a resource: its rows selected by their keys (read first, by
 * `readKeys`), or its own window, or its rows with limit and offset. The keys and the rows are
 * read by two statements, as the count is by a third: a row deleted in between is missing from the
 * page, as from every later one.
 */
export async function pageRowsQuery(
  db: DB,
  definition: ResourceDefinition,
  filter: ResourceFilter,
  window: RowWindow,
  readKeys: KeysReader = executeKeys,
): Promise<RowsQuery> {
  if (definition.pageKey && definition.keys) {
    const keyRows = await readKeys(definition.keys(db, filter).limit(window.limit).offset(window.offset));
    // `keys` selects one column, the key, whatever its name.
    const keys = keyRows.map((row) => Object.values(row)[0] as PageKey);
    return rowsWithKeys(definition.select(db, filter), sql.ref(definition.pageKey), keys);
  }
  return definition.selectWindow
    ? definition.selectWindow(db, filter, window)
    : definition.select(db, filter).limit(window.limit).offset(window.offset);
}

/**
 * One page of a resource, never past the cap, as PostgreSQL's binary COPY of its rows' text fields
 * (rendering.ts): the bytes src/formats/json-rows.ts writes the JSON page from, as an export's are
 * written into a CSV. Null when the window is empty (past the cap).
 */
export async function copyResourcePage(
  db: DB,
  definition: ResourceDefinition,
  filter: ResourceFilter,
  limit: number,
  offset: number,
  cap: number | null,
): Promise<Buffer | null> {
  const window = allowedWindow(limit, offset, cap);
  if (window === null) return null;
  return copyOutWhole(db, textFieldsOf(definition, await pageRowsQuery(db, definition, filter, window)));
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
    : (await countQuery(definition.keys ? definition.keys(db, filter) : definition.select(db, filter), cap).execute(db)).rows[0]!.n;
  return cap !== null && n > cap ? { total: cap, truncated: true } : { total: n, truncated: false };
}

/**
 * Every row up to the cap, in the order of the pages, as PostgreSQL's binary COPY of their text
 * fields (rendering.ts): the bytes an export writes (src/formats/), with flat memory whatever the
 * volume, at the reader's pace (copyOut).
 */
export function copyResourceRows(db: DB, definition: ResourceDefinition, filter: ResourceFilter, cap: number | null): Promise<Readable> {
  const rows = definition.select(db, filter);
  return copyOut(db, textFieldsOf(definition, cap === null ? rows : rows.limit(cap)));
}
