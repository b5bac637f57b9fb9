import { type RawBuilder, sql } from 'kysely';

/**
 * A position in a list that goes newest first (keys, endpoints, deliveries): the last row's
 * creation instant, to the microsecond, and its id. The management API's cursors carry it.
 */
export interface ListPosition {
  at: string;
  id: string;
}

/** A row's creation instant as a position holds it: UTC, to the microsecond (`2026-11-28T09:12:44.512345Z`). */
export function positionOf(createdAt: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

/** The rows after a position in the newest-first order of `(created_at, id)`. */
export function afterPosition(createdAt: RawBuilder<unknown>, id: RawBuilder<unknown>, after: ListPosition): RawBuilder<boolean> {
  return sql<boolean>`(${createdAt}, ${id}) < (${after.at}::timestamptz, ${after.id}::uuid)`;
}
