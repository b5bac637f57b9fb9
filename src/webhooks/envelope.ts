import { type Expression, type RawBuilder, sql } from 'kysely';

const parisInstant = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'Europe/Paris', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
  second: '2-digit', fractionalSecondDigits: 3, hourCycle: 'h23', timeZoneName: 'longOffset',
});

/**
 * RFC 3339 with milliseconds and the Paris offset (`2026-03-12T16:42:06.128+01:00`): the date-time
 * format of every webhook body. This one formats a Date (event data); `parisTimestampSql` below
 * renders a timestamptz in SQL (the envelope's `created_at`); a test holds them to the same output.
 */
export function parisTimestamp(instant: Date): string {
  const p = Object.fromEntries(parisInstant.formatToParts(instant).map((part) => [part.type, part.value]));
  const offset = p.timeZoneName === 'GMT' ? '+00:00' : p.timeZoneName!.slice(3);
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond}${offset}`;
}

/** The same format in SQL. Paris is always ahead of UTC (+01:00 or +02:00). */
export function parisTimestampSql(timestamp: Expression<unknown> | RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`(to_char(${timestamp} at time zone 'Europe/Paris', 'YYYY-MM-DD"T"HH24:MI:SS.MS')
    || '+' || to_char((${timestamp} at time zone 'Europe/Paris') - (${timestamp} at time zone 'UTC'), 'HH24:MI'))`;
}

/**
 * The body of every delivery of an event, built once, in SQL, in the statement that records the
 * event (its id and `created_at` come from the database): `{"id","type","created_at","data"}`, with
 * `data` exactly as the caller serialised it (its keys in the caller's order). The same bytes go to
 * every endpoint and on every attempt, so that a receiver's signature check always matches.
 */
export function eventBodySql(event: {
  id: Expression<unknown> | RawBuilder<unknown>;
  type: Expression<unknown> | RawBuilder<unknown>;
  createdAt: Expression<unknown> | RawBuilder<unknown>;
  dataJson: string;
}): RawBuilder<string> {
  return sql<string>`('{"id":' || to_json(${event.id}::text)::text || ',"type":' || to_json(${event.type}::text)::text
    || ',"created_at":' || to_json(${parisTimestampSql(event.createdAt)})::text || ',"data":' || ${event.dataJson}::text || '}')`;
}
