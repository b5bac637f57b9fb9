import { type Expression, type RawBuilder, sql } from 'kysely';
import { parisDayStart } from '../render';
import type { ResourceFilter } from './definition';

type Timestamp = Expression<unknown> | RawBuilder<unknown>;

/** The first instant of a Paris year. */
export function yearStart(year: number): RawBuilder<Date> {
  return parisDayStart(`${year}-01-01`);
}

/**
 * `year` and `updated_since` (docs/decisions.md#natural-date) on a timestamptz natural date, written as ranges over the stored
 * timestamp so that an index on it serves them.
 */
export function naturalTimestampFilter(timestamp: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [sql`${timestamp} >= ${yearStart(filter.year)}`, sql`${timestamp} < ${yearStart(filter.year + 1)}`];
  if (filter.updatedSince) conditions.push(sql`${timestamp} >= ${parisDayStart(filter.updatedSince)}`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}

/**
 * The same on a natural date indexed as its Paris day (quiz attempts, ordered by day then attempt
 * number): ranges over the day, given as the indexed expression or column.
 */
export function naturalDayFilter(day: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [sql`${day} >= make_date(${filter.year}, 1, 1)`, sql`${day} < make_date(${filter.year + 1}, 1, 1)`];
  if (filter.updatedSince) conditions.push(sql`${day} >= ${filter.updatedSince}::date`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}

/**
 * `year` and `updated_since` on a year slice (enrolment_years, lesson_progress_years): the row's
 * year column, and its natural timestamp (which lies in that year) for `updated_since`.
 */
export function yearSliceFilter(year: Timestamp, natural: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [sql`${year} = ${filter.year}`];
  if (filter.updatedSince) conditions.push(sql`${natural} >= ${parisDayStart(filter.updatedSince)}`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}
