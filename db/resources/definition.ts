import type { SelectQueryBuilder } from 'kysely';
import type { DB } from '../connection';

/** What one list request asks of a resource, resolved and scoped to the caller's organisation. */
export interface ResourceFilter {
  orgId: string;
  /** Paris calendar year of the natural date (ignored by resources without one). */
  year: number;
  /** `YYYY-MM-DD`: keep rows whose natural date is on or after it; null when absent or ignored. */
  updatedSince: string | null;
  /** One learner (membership) of the organisation, or null for the whole organisation. */
  membershipId: string | null;
  /** One programme of the organisation, or null. */
  programmeId: string | null;
}

/**
 * A list resource: its wire name, its columns in the contract's order, and the query of its rows.
 * The shared machinery (db/resources/list.ts, handlers/list-resource.ts) does the rest: paging,
 * the cap, meta, CSV. Adding a resource is one file of this shape.
 */
export interface ResourceDefinition<Row extends Record<string, unknown> = Record<string, unknown>, Name extends string = string> {
  /** The wire name (`resource` of the envelope). */
  readonly name: Name;
  readonly columns: readonly (keyof Row & string)[];
  /** Whether `year` applies (false for `users`). */
  readonly filtersByYear: boolean;
  /** Whether `updated_since` applies (false for `learners`). */
  readonly filtersByUpdatedSince: boolean;
  /** Whether `programme` applies (false for `learners`, `logins`, `users`). */
  readonly filtersByProgramme: boolean;
  /**
   * The rows of the filter, wire-ready (French keys, rendered dates and Oui/Non), ordered by the
   * natural date then a unique key, so that offset pagination is deterministic. The count replaces
   * the select list and drops the order, so the FROM/WHERE/GROUP BY alone must define the rows (no
   * DISTINCT in the select list); per-row lookups belong in the select list as scalar subqueries.
   */
  select(db: DB, filter: ResourceFilter): SelectQueryBuilder<any, any, Row>;
  /**
   * Optional, for resources whose rows cost more to build than to find: the filter's rows as their
   * unique keys only, in the same order and with the fewest joins. Counting reads these.
   */
  keys?(db: DB, filter: ResourceFilter): SelectQueryBuilder<any, any, any>;
  /** Optional, instead of `keys`: the number of the filter's rows, computed without listing them. */
  count?(db: DB, filter: ResourceFilter): Promise<number>;
  /**
   * Optional: the rows of one window of the order, built for that window only (a deep offset then
   * skips cheap keys, not rendered rows). Same rows, same order as `select` with limit and offset.
   */
  selectWindow?(db: DB, filter: ResourceFilter, window: RowWindow): SelectQueryBuilder<any, any, Row>;
}

/** A page of a resource's order. */
export interface RowWindow {
  limit: number;
  offset: number;
}
