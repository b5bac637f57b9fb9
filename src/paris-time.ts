const parisParts = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'Europe/Paris', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
});

function parts(date: Date): Record<string, string> {
  return Object.fromEntries(parisParts.formatToParts(date).map((part) => [part.type, part.value]));
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
