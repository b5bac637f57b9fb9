import { type Expression, type RawBuilder, sql } from 'kysely';

/**
 * The one place where stored values become wire values, in SQL: dates and date-times in
 * Europe/Paris, yes/no as Oui/Non. Queries return rows ready for JSON and CSV alike. And the other
 * way: the instants a wire date (a parameter, an expiry date) stands for. The rules:
 * docs/decisions.md#time and #values.
 */
export const parisZone = 'Europe/Paris';

/** `YYYY-MM-DD` of a timestamptz, in Paris. */
export function parisDate(timestamp: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char((${timestamp} at time zone 'Europe/Paris')::date, 'YYYY-MM-DD')`;
}

/** `YYYY-MM-DD` of a date column that already holds a Paris day (a quiz attempt's day). */
export function wireDate(day: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${day}, 'YYYY-MM-DD')`;
}

/** The Paris calendar date of a timestamptz, as a date (for comparisons and indexes). */
export function parisDay(timestamp: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`(${timestamp} at time zone 'Europe/Paris')::date`;
}

/** `YYYY-MM-DD HH:MM` of a timestamptz, in Paris. */
export function parisDateTime(timestamp: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${timestamp} at time zone 'Europe/Paris', 'YYYY-MM-DD HH24:MI')`;
}

export function ouiNon(condition: Expression<unknown> | RawBuilder<unknown>): RawBuilder<'Oui' | 'Non'> {
  return sql<'Oui' | 'Non'>`case when ${condition} then 'Oui' else 'Non' end`;
}

/**
 * RFC 3339 with milliseconds and the Paris offset (`2026-01-14T09:05:21.640+01:00`): the date-time
 * format of webhook payloads, precise enough for receivers to order events. Paris is always ahead
 * of UTC (+01:00 or +02:00), so the sign is always `+`.
 */
export function parisRfc3339(timestamp: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`(to_char(${timestamp} at time zone 'Europe/Paris', 'YYYY-MM-DD"T"HH24:MI:SS.MS')
    || '+' || to_char((${timestamp} at time zone 'Europe/Paris') - (${timestamp} at time zone 'UTC'), 'HH24:MI'))`;
}

/**
 * The instant a Paris calendar day begins, for a 'YYYY-MM-DD' text: a timestamptz parameter that
 * PostgreSQL reads in the Paris zone when it binds it. The planner sees its value (it estimates the
 * rows of a year, not a default fraction) and no row evaluates anything.
 */
export function parisDayStart(day: string): RawBuilder<Date> {
  return sql<Date>`${`${day} 00:00 Europe/Paris`}::timestamptz`;
}

/** The instant the Paris day after `day` (a 'YYYY-MM-DD' text) begins: the end of that day. */
export function parisDayEnd(day: string): RawBuilder<Date> {
  return sql<Date>`((${day}::date + 1)::timestamp at time zone 'Europe/Paris')`;
}
