import { sql, type SelectQueryBuilder } from 'kysely';
import type { DB, Database } from '../../src/database';

// Any resource's query: the machinery reads rows without caring for their shape.
type RowsQuery = SelectQueryBuilder<Database, any, any>;

export interface CountedRows {
  /** Rows the request works over: at most the cap. */
  total: number;
  /** More rows matched than the cap. */
  truncated: boolean;
}

/** Counts the rows, reading at most cap + 1 of them (cap null: no cap, for one learner). */
export async function countRows(db: DB, query: RowsQuery, cap: number | null): Promise<CountedRows> {
  const bounded = cap === null ? query.clearOrderBy() : query.limit(cap + 1);
  const result = await sql<{ n: number }>`select count(*)::int as n from (${bounded}) as counted`.execute(db);
  const n = result.rows[0]!.n;
  return cap !== null && n > cap ? { total: cap, truncated: true } : { total: n, truncated: false };
}

/** One page of rows, never past the cap. */
export async function pageRows(query: RowsQuery, limit: number, offset: number, cap: number | null) {
  const allowed = cap === null ? limit : Math.min(limit, cap - offset);
  if (allowed <= 0) return [];
  return query.limit(allowed).offset(offset).execute();
}

/** Every row up to the cap, read through a cursor so memory stays flat whatever the volume. */
export function streamRows(query: RowsQuery, cap: number | null): AsyncIterable<Record<string, unknown>> {
  return (cap === null ? query : query.limit(cap)).stream(1000);
}
