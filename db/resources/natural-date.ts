import { type Expression, type RawBuilder, sql } from 'kysely';
import { parisYearStart } from '../render';
import type { ResourceFilter } from './definition';

type Timestamp = Expression<unknown> | RawBuilder<unknown>;

/** The instant a Paris calendar day begins, for a 'YYYY-MM-DD' text. */
function parisDayStart(day: string): RawBuilder<Date> {
  return sql<Date>`(select ${day}::date::timestamp at time zone 'Europe/Paris')`;
}

/**
 * The first instant of a Paris year, as a one-row subquery: computed once per query. make_timestamptz
 * is only stable, and as a plain expression PostgreSQL evaluates it for every row it filters.
 */
export function yearStart(year: number): RawBuilder<Date> {
  return sql<Date>`(select ${parisYearStart(year)})`;
}

/**
 * `year` and `updated_since` on a timestamptz natural date, written as ranges over the stored
 * timestamp so that an index on it serves them.
 */
export function naturalTimestampFilter(timestamp: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [
    sql`${timestamp} >= ${yearStart(filter.year)}`,
    sql`${timestamp} < ${yearStart(filter.year + 1)}`,
  ];
  if (filter.updatedSince) conditions.push(sql`${timestamp} >= ${parisDayStart(filter.updatedSince)}`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}

/**
 * The same on a natural date indexed as its Paris day (quiz attempts, ordered by day then attempt
 * number): ranges over the day, given as the indexed expression or column.
 */
export function naturalDayFilter(day: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [
    sql`${day} >= make_date(${filter.year}, 1, 1)`,
    sql`${day} < make_date(${filter.year + 1}, 1, 1)`,
  ];
  if (filter.updatedSince) conditions.push(sql`${day} >= ${filter.updatedSince}::date`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}
