/*
 * Paris time in JavaScript: the wire formats of the API (dates, date-times, RFC 3339 of webhooks),
 * the current Paris year, Paris's offset from UTC (the generator's calendar), and the long French
 * date of messages. db/render.ts is its twin in SQL (docs/decisions.md#time).
 */

const parisParts = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'Europe/Paris',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
});

// Every request formats "now" (the default year, meta.generated_at), and formatToParts is slow
// next to a request's other work: the last minute's parts are kept. Paris is a whole number of
// hours from UTC, so its date, hour and minute change only when the UTC minute does.
let lastMinute = Number.NaN;
let lastParts: Record<string, string> = {};

function parts(date: Date): Record<string, string> {
  const minute = Math.floor(date.getTime() / 60_000);
  if (minute !== lastMinute) {
    lastParts = Object.fromEntries(parisParts.formatToParts(date).map((part) => [part.type, part.value]));
    lastMinute = minute;
  }
  return lastParts;
}

/** `YYYY-MM-DD HH:MM` in Paris: the API's date-time format. */
export function formatParisDateTime(date: Date): string {
  const p = parts(date);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** `YYYY-MM-DD` in Paris. */
export function formatParisDate(date: Date): string {
  const p = parts(date);
  return `${p.year}-${p.month}-${p.day}`;
}

/** The default `year` of every request: the current calendar year in Paris. */
export function currentParisYear(now: Date = new Date()): number {
  return Number(parts(now).year);
}

const parisInstant = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'Europe/Paris',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  fractionalSecondDigits: 3,
  hourCycle: 'h23',
  timeZoneName: 'longOffset',
});

/**
 * RFC 3339 with milliseconds and the Paris offset (`2026-03-12T16:42:06.128+01:00`): the date-time
 * format of webhook payloads. `parisRfc3339` of db/render.ts is the same in SQL (a test holds them
 * to the same output).
 */
export function formatParisRfc3339(instant: Date): string {
  const p = Object.fromEntries(parisInstant.formatToParts(instant).map((part) => [part.type, part.value]));
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond}${utcOffset(p.timeZoneName!)}`;
}

/** `+01:00` of a long offset name (`GMT+01:00`; `GMT` alone at UTC). */
function utcOffset(timeZoneName: string): string {
  return timeZoneName === 'GMT' ? '+00:00' : timeZoneName.slice(3);
}

/** How many minutes Paris is ahead of UTC at an instant (60 in winter, 120 in summer). */
export function parisOffsetMinutes(instant: Date): number {
  const offset = utcOffset(parisInstant.formatToParts(instant).find((part) => part.type === 'timeZoneName')!.value);
  const minutes = Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6));
  return offset.startsWith('-') ? -minutes : minutes;
}

const longFrenchDate = new Intl.DateTimeFormat('fr-FR', { timeZone: 'Europe/Paris', dateStyle: 'long' });

/** `24 novembre 2026`, `1er février 2024`: a date in a French sentence (messages to partners and operators). */
export function formatParisLongDate(date: Date): string {
  // French writes the first day of a month as an ordinal; Intl gives the cardinal.
  return longFrenchDate.format(date).replace(/^1 /, '1er ');
}
