/**
 * How the wire values of the resources read in a French document. The API's values are already in
 * Paris time; these only change their spelling (`2026-03-12` reads `12/03/2026`), never the figure.
 */

/** No-break space: keeps `1 234` and `93 min` on one line. */
export const noBreakSpace = '\u00a0';
export const missing = '—';

/** `YYYY-MM-DD` -> `DD/MM/YYYY`. */
export function frenchDate(date: string | null): string {
  if (date === null) return missing;
  const [year, month, day] = date.split('-');
  return `${day}/${month}/${year}`;
}

/** `YYYY-MM-DD HH:MM` -> `DD/MM/YYYY HH:MM`. */
export function frenchDateTime(dateTime: string | null): string {
  if (dateTime === null) return missing;
  const [date, time] = dateTime.split(' ');
  return `${frenchDate(date!)} ${time}`;
}

/** An integer with French digit grouping: `12345` -> `12 345`. */
export function frenchInteger(value: number | null): string {
  if (value === null) return missing;
  const sign = value < 0 ? '-' : '';
  return sign + String(Math.abs(Math.round(value))).replace(/\B(?=(\d{3})+(?!\d))/g, noBreakSpace);
}

/** A number with at most one decimal and a decimal comma: `21.5` -> `21,5`. */
export function frenchDecimal(value: number | null): string {
  if (value === null) return missing;
  const rounded = Math.round(value * 10) / 10;
  const [whole, fraction] = String(Math.abs(rounded)).split('.');
  return (rounded < 0 ? '-' : '') + frenchInteger(Number(whole)) + (fraction ? `,${fraction}` : '');
}

/** Minutes as the API gives them, with hours for long durations: `1234` -> `1 234 min (20 h 34)`. */
export function minutesWithHours(minutes: number | null): string {
  if (minutes === null) return missing;
  const plain = `${frenchInteger(minutes)}${noBreakSpace}min`;
  if (minutes < 60) return plain;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return `${plain} (${frenchInteger(hours)}${noBreakSpace}h${noBreakSpace}${String(rest).padStart(2, '0')})`;
}

/** `7` + `/5` -> `7/5`; a missing value stays a dash. */
export function outOf(value: number | null, scale: number): string {
  return value === null ? missing : `${frenchInteger(value)}/${scale}`;
}

export function orMissing(value: string | null | undefined): string {
  return value === null || value === undefined || value === '' ? missing : value;
}

/**
 * `de` before a name, elided before a vowel sound as French writes it: « de Camille », « d’Adrien »,
 * « d’Hélène » (a name's h is taken as mute, as most are), « d’Yves » but « de Yannick ».
 */
export function deName(name: string): string {
  const vowel = 'aeiouàâäéèêëîïôöùûüæœ';
  const elided = new RegExp(`^([${vowel}]|h[${vowel}y]|y[^${vowel}])`, 'i').test(name);
  return elided ? `d’${name}` : `de ${name}`;
}
