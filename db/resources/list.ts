import { sql, type SelectQueryBuilder } from 'kysely';
import type { DB, Database } from '../../src/database';
import type { ResourceDefinition, ResourceFilter, RowWindow } from './definition';

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
 * nothing here.
 */
export async function countRows(db: DB, query: RowsQuery, cap: number | null): Promise<CountedRows> {
  const result = await countQuery(query, cap).execute(db);
  const n = result.rows[0]!.n;
  return cap !== null && n > cap ? { total: cap, truncated: true } : { total: n, truncated: false };
}

/** The SQL of countRows (also run by the bare server of the users benchmark). */
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

/** One page of rows, never past the cap. */
export async function pageRows(query: RowsQuery, limit: number, offset: number, cap: number | null) {
  const window = allowedWindow(limit, offset, cap);
  if (window === null) return [];
  return query.limit(window.limit).offset(window.offset).execute();
}

/** One page of a resource: built for the page alone when the resource knows how. */
export async function pageResourceRows(db: DB, definition: ResourceDefinition, filter: ResourceFilter, limit: number, offset: number, cap: number | null) {
  if (!definition.selectWindow) return pageRows(definition.select(db, filter), limit, offset, cap);
  const window = allowedWindow(limit, offset, cap);
  if (window === null) return [];
  return definition.selectWindow(db, filter, window).execute();
}

/** Counts a resource's rows: its own count, else on its keys, else on its rows. */
export async function countResourceRows(db: DB, definition: ResourceDefinition, filter: ResourceFilter, cap: number | null): Promise<CountedRows> {
  if (definition.count) {
    const n = await definition.count(db, filter);
    return cap !== null && n > cap ? { total: cap, truncated: true } : { total: n, truncated: false };
  }
  return countRows(db, definition.keys ? definition.keys(db, filter) : definition.select(db, filter), cap);
}

/** Every row up to the cap, read through a cursor so memory stays flat whatever the volume. */
export function streamRows(query: RowsQuery, cap: number | null): AsyncIterable<Record<string, unknown>> {
  return (cap === null ? query : query.limit(cap)).stream(1000);
}
