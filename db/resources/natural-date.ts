import { type Expression, type RawBuilder, sql } from 'kysely';
import { parisDay, parisYearStart } from '../render';
import type { ResourceFilter } from './definition';

type Timestamp = Expression<unknown> | RawBuilder<unknown>;

/** The instant a Paris calendar day begins, for a 'YYYY-MM-DD' text. */
function parisDayStart(day: string): RawBuilder<Date> {
  return sql<Date>`(${day}::date::timestamp at time zone 'Europe/Paris')`;
}

/**
 * `year` and `updated_since` on a timestamptz natural date, written as ranges over the stored
 * timestamp so that an index on it serves them.
 */
export function naturalTimestampFilter(timestamp: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [
    sql`${timestamp} >= ${parisYearStart(filter.year)}`,
    sql`${timestamp} < ${parisYearStart(filter.year + 1)}`,
  ];
  if (filter.updatedSince) conditions.push(sql`${timestamp} >= ${parisDayStart(filter.updatedSince)}`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}

/**
 * The same on a natural date indexed as its Paris day (quiz attempts, ordered by day then attempt
 * number): ranges over `parisDay(timestamp)`, the indexed expression.
 */
export function naturalDayFilter(timestamp: Timestamp, filter: ResourceFilter): RawBuilder<boolean> {
  const day = parisDay(timestamp);
  const conditions = [
    sql`${day} >= make_date(${filter.year}, 1, 1)`,
    sql`${day} < make_date(${filter.year + 1}, 1, 1)`,
  ];
  if (filter.updatedSince) conditions.push(sql`${day} >= ${filter.updatedSince}::date`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}
