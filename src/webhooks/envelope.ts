import type { EventType } from '../../db/events';

const parisInstant = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'Europe/Paris', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
  second: '2-digit', fractionalSecondDigits: 3, hourCycle: 'h23', timeZoneName: 'longOffset',
});

/**
 * RFC 3339 with milliseconds and the Paris offset (`2026-03-12T16:42:06.128+01:00`): the date-time
 * format of every webhook body.
 */
export function parisTimestamp(instant: Date): string {
  const p = Object.fromEntries(parisInstant.formatToParts(instant).map((part) => [part.type, part.value]));
  const offset = p.timeZoneName === 'GMT' ? '+00:00' : p.timeZoneName!.slice(3);
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond}${offset}`;
}

/**
 * The body of every delivery of one event, built once: the same bytes go to every endpoint and on
 * every attempt, so that a signature computed over them by the receiver always matches.
 */
export function eventBody(event: { id: string; type: EventType; createdAt: Date; data: Record<string, unknown> }): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: parisTimestamp(event.createdAt), data: event.data });
}
