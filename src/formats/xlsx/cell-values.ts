import { copyBytes } from '../row-batch';

/*
 * Values as SpreadsheetML writes them, on UTF-8 bytes: texts escaped for XML and for the format's
 * own `_xHHHH_` escapes, numbers and dates recognised, row numbers and column letters.
 */

/** Bytes a value's byte becomes at most (`_x001F_` for a control character). */
export const escapedBytesPerByte = 7;

const ampersand = 0x26;
const lessThan = 0x3c;
const greaterThan = 0x3e;
const underscore = 0x5f;
const tab = 0x09;
const lineFeed = 0x0a;
const carriageReturn = 0x0d;
const space = 0x20;
const hyphen = 0x2d;
const colon = 0x3a;

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x30 && byte <= 0x39;
}

function isHexDigit(byte: number | undefined): boolean {
  return byte !== undefined && (isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66));
}

export function writeAscii(text: string, target: Buffer, at: number): number {
  for (let i = 0; i < text.length; i++) target[at++] = text.charCodeAt(i);
  return at;
}

/** `_x` and 4 hexadecimal digits and `_` at `at`: the format's escape of a character (ST_Xstring). */
function startsEscapeSequence(source: Uint8Array, at: number, end: number): boolean {
  return (
    at + 6 < end &&
    source[at + 1] === 0x78 &&
    isHexDigit(source[at + 2]) &&
    isHexDigit(source[at + 3]) &&
    isHexDigit(source[at + 4]) &&
    isHexDigit(source[at + 5]) &&
    source[at + 6] === underscore
  );
}

/** 1 for the bytes that a text writes as they are (a table: a loop over every byte of the texts looks each up). */
const plainTextBytes = new Uint8Array(256).map((_, byte) =>
  byte >= space && byte !== ampersand && byte !== lessThan && byte !== greaterThan && byte !== underscore && byte !== 0xef ? 1 : 0,
);

/**
 * Writes the UTF-8 text `source[start, end)` as the content of an element; returns where it ends.
 * Escaped: the markup characters; a carriage return (an XML reader takes it for a line feed unless
 * written as a reference); the characters that XML 1.0 forbids even as references (C0 controls but
 * tab and line feed, U+FFFE and U+FFFF), as the format's `_xHHHH_`, which Excel and LibreOffice read
 * back as the character; and so an underscore that starts such a sequence in the text itself, as
 * `_x005F_`, so that it stays as written. Every byte looked for is ASCII, or the lead byte 0xEF of
 * U+FFFE and U+FFFF: none occurs inside another character's UTF-8.
 */
export function writeText(source: Uint8Array, start: number, end: number, target: Buffer, at: number): number {
  let plainFrom = start;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    if (plainTextBytes[byte] === 1) continue;
    let replacement: string | null = null;
    let width = 1;
    if (byte === ampersand) replacement = '&amp;';
    else if (byte === lessThan) replacement = '&lt;';
    else if (byte === greaterThan) replacement = '&gt;';
    else if (byte === carriageReturn) replacement = '&#13;';
    else if (byte === underscore) replacement = startsEscapeSequence(source, i, end) ? '_x005F_' : null;
    else if (byte === 0xef) {
      const last = source[i + 2];
      if (i + 2 < end && source[i + 1] === 0xbf && (last === 0xbe || last === 0xbf)) {
        replacement = last === 0xbe ? '_xFFFE_' : '_xFFFF_';
        width = 3;
      }
    } else if (byte !== tab && byte !== lineFeed) replacement = `_x00${byte.toString(16).toUpperCase().padStart(2, '0')}_`;
    if (replacement === null) continue;
    at = writeAscii(replacement, target, copyBytes(source, plainFrom, i, target, at));
    i += width - 1;
    plainFrom = i + 1;
  }
  return copyBytes(source, plainFrom, end, target, at);
}

/** Whether `source[start, end)` is a number as JavaScript and PostgreSQL write them (`-12`, `4.5`, `1e+21`): not `NaN` nor `Infinity`. */
export function isNumber(source: Uint8Array, start: number, end: number): boolean {
  let at = source[start] === hyphen ? start + 1 : start;
  if (!isDigit(source[at])) return false;
  for (at++; at < end; at++) {
    const byte = source[at]!;
    if (!isDigit(byte) && byte !== 0x2e && byte !== 0x65 && byte !== 0x45 && byte !== 0x2b && byte !== hyphen) return false;
  }
  return true;
}

/** The number that the digits `source[start, end)` write. */
function digitsValue(source: Uint8Array, start: number, end: number): number {
  let value = 0;
  for (let at = start; at < end; at++) value = value * 10 + source[at]! - 0x30;
  return value;
}

// Days from the spreadsheets' day 0 (1899-12-30) to 1970-01-01; milliseconds and minutes in a day.
const unixEpochSerial = 25_569;
const dayMilliseconds = 86_400_000;
const dayMinutes = 1440;

/**
 * `2026-01-12` or, with `withTime`, `2026-01-12 09:05` (Paris time, as the API writes it) at
 * `source[start, end)` as a spreadsheet serial (days since 1899-12-30, the time as a fraction of a
 * day): a spreadsheet date has no time zone, so the wall-clock time is the value. Null when the
 * bytes are not such a date.
 */
export function dateSerial(source: Uint8Array, start: number, end: number, withTime: boolean): number | null {
  if (end - start !== (withTime ? 16 : 10)) return null;
  for (let at = start; at < end; at++) {
    const offset = at - start;
    const expected = offset === 4 || offset === 7 ? hyphen : offset === 10 ? space : offset === 13 ? colon : null;
    if (expected === null ? !isDigit(source[at]) : source[at] !== expected) return null;
  }
  const day =
    Date.UTC(
      digitsValue(source, start, start + 4),
      digitsValue(source, start + 5, start + 7) - 1,
      digitsValue(source, start + 8, start + 10),
    ) /
      dayMilliseconds +
    unixEpochSerial;
  if (!withTime) return day;
  return day + (digitsValue(source, start + 11, start + 13) * 60 + digitsValue(source, start + 14, start + 16)) / dayMinutes;
}

/** `A`, `B`, ... `Z`, `AA`...: a column's letters in a cell reference. */
export function columnLetters(index: number): string {
  let letters = '';
  for (let rest = index + 1; rest > 0; rest = Math.floor((rest - 1) / 26)) {
    letters = String.fromCharCode(65 + ((rest - 1) % 26)) + letters;
  }
  return letters;
}

/** A text as the content of an element or of an attribute in double quotes (never holding `"`, here). */
export function escapeXmlText(text: string): string {
  const bytes = Buffer.from(text);
  const out = Buffer.allocUnsafe(bytes.length * escapedBytesPerByte);
  return out.subarray(0, writeText(bytes, 0, bytes.length, out, 0)).toString();
}

/** Characters of the UTF-8 text `source[start, end)`: its bytes but the continuation bytes. */
export function characters(source: Uint8Array, start: number, end: number): number {
  let count = 0;
  for (let at = start; at < end; at++) if ((source[at]! & 0xc0) !== 0x80) count++;
  return count;
}
