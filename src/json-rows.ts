import type { ColumnType } from '../db/resources/definition';
import { copyBytes, copyRowsStart } from './binary-copy';

/*
 * A page of rows as the JSON array the API sends, written from PostgreSQL's binary COPY of the
 * rows' fields as texts (db/resources/rendering.ts, `textFieldsOf`), as the CSV is (src/csv.ts):
 * no row becomes a JavaScript object, no field a string. The bytes are those JSON.stringify writes
 * of the row objects pg would have built: keys in the columns' order; null as `null`; integers and
 * decimals as their text (PostgreSQL writes them as JavaScript does: rendering.ts); every other
 * field a JSON string, escaped as JSON.stringify escapes (a quote, a backslash, and the control
 * characters, with its short forms \b \f \n \r \t). UTF-8 from PostgreSQL holds no lone surrogate,
 * the only other character JSON.stringify escapes.
 */

const quote = 0x22;
const backslash = 0x5c;
const hexDigits = Buffer.from('0123456789abcdef');
/** The escape of each byte that needs one (0: written as it is). */
const shortEscapes = new Map([
  [0x08, 0x62], // \b
  [0x09, 0x74], // \t
  [0x0a, 0x6e], // \n
  [0x0c, 0x66], // \f
  [0x0d, 0x72], // \r
  [quote, quote],
  [backslash, backslash],
]);
const needsEscape = new Uint8Array(256);
for (let byte = 0; byte < 0x20; byte++) needsEscape[byte] = 1;
needsEscape[quote] = 1;
needsEscape[backslash] = 1;
const nullBytes = Buffer.from('null');

export interface JsonRows {
  /** `[{…},{…}]`: the rows in JSON, with what `around` put before and after them. */
  json: Buffer;
  /** How many rows it holds. */
  count: number;
}

/** What a page writes before and after its rows (the envelope, whose head needs their count). */
export type AroundRows = (count: number) => { before: string; after: string };

const nothingAround: AroundRows = () => ({ before: '', after: '' });

/** What the writer keeps of a resource's columns: each key as it opens its field, and whether the value is a number. */
interface Layout {
  keys: Buffer[];
  numeric: boolean[];
  /** The bytes of every key of a row, with its braces and commas. */
  keysLength: number;
}

const layouts = new WeakMap<readonly string[], Layout>();

function layoutOf(columns: readonly string[], types: Readonly<Record<string, ColumnType>>): Layout {
  let layout = layouts.get(columns);
  if (layout === undefined) {
    const keys = columns.map((column, index) => Buffer.from(`${index === 0 ? '{' : ','}${JSON.stringify(column)}:`));
    layout = {
      keys,
      numeric: columns.map((column) => types[column] === 'integer' || types[column] === 'decimal'),
      keysLength: keys.reduce((sum, key) => sum + key.length, 0),
    };
    layouts.set(columns, layout);
  }
  return layout;
}

/** The rows of a COPY output and the bytes of their JSON array without escapes, read from the fields' lengths alone. */
function measureRows(copy: Buffer, start: number, layout: Layout): { count: number; bytes: number } {
  const fieldCount = layout.keys.length;
  const end = copy.length;
  let at = start;
  let count = 0;
  // The brackets; each row's keys, closing brace and comma (one too many: the last row has none).
  let bytes = 2;
  while (true) {
    if (at + 2 > end) throw new Error('COPY output ended before its trailer');
    const fields = copy.readInt16BE(at);
    at += 2;
    if (fields === -1) break;
    if (fields !== fieldCount) throw new Error(`COPY row of ${fields} fields, ${fieldCount} expected`);
    count++;
    bytes += layout.keysLength + 2;
    for (let field = 0; field < fields; field++) {
      if (at + 4 > end) throw new Error('COPY output ended within a field');
      const length = copy.readInt32BE(at);
      at += 4;
      if (length < 0) {
        bytes += nullBytes.length;
        continue;
      }
      if (at + length > end) throw new Error('COPY output ended within a field');
      at += length;
      bytes += layout.numeric[field] ? length : length + 2;
    }
  }
  return { count, bytes: count > 0 ? bytes - 1 : bytes };
}

/**
 * The rows of a whole binary COPY output (`copy`, null: no rows) in JSON, between what `around`
 * writes for their count. One buffer of the exact size (grown only for a text that needs escapes):
 * a page allocates its bytes once, not once for the rows and again for the envelope, which kept
 * the young generation's external memory, and so V8's collections, twice as busy.
 */
export function jsonRowsFromCopy(
  definition: { columns: readonly string[]; columnTypes: Readonly<Record<string, ColumnType>> },
  copy: Buffer | null,
  around: AroundRows = nothingAround,
): JsonRows {
  const layout = layoutOf(definition.columns, definition.columnTypes);
  const { keys, numeric } = layout;
  const start = copy === null ? 0 : copyRowsStart(copy);
  if (start === null) throw new Error('COPY output ended within its header');
  const { count, bytes } = copy === null ? { count: 0, bytes: 2 } : measureRows(copy, start, layout);
  const { before, after } = around(count);
  const planned = Buffer.byteLength(before) + bytes + Buffer.byteLength(after);
  let out = Buffer.allocUnsafe(planned);
  let written = out.write(before, 0);
  // Where the writing would be without escapes: the room a text with escapes needs is beyond it.
  let plannedAt = written;
  out[written++] = 0x5b; // [
  plannedAt++;
  let at = start;
  for (let row = 0; copy !== null && row < count; row++) {
    at += 2;
    if (row > 0) {
      out[written++] = 0x2c; // ,
      plannedAt++;
    }
    for (let field = 0; field < keys.length; field++) {
      const length = copy.readInt32BE(at);
      at += 4;
      const key = keys[field]!;
      written = copyBytes(key, 0, key.length, out, written);
      plannedAt += key.length;
      if (length < 0) {
        written = copyBytes(nullBytes, 0, nullBytes.length, out, written);
        plannedAt += nullBytes.length;
        continue;
      }
      if (numeric[field]) {
        written = copyBytes(copy, at, at + length, out, written);
        plannedAt += length;
      } else {
        plannedAt += length + 2;
        if (needsEscapes(copy, at, at + length)) {
          // At most 6 bytes per byte (\u00XX) and its quotes, and what is still to come.
          const needed = written + 6 * length + 2 + (planned - plannedAt);
          if (needed > out.length) {
            const larger = Buffer.allocUnsafe(Math.max(needed, out.length + (out.length >> 2)));
            out.copy(larger, 0, 0, written);
            out = larger;
          }
          written = writeEscapedJsonString(copy, at, at + length, out, written);
        } else {
          out[written++] = quote;
          written = copyBytes(copy, at, at + length, out, written);
          out[written++] = quote;
        }
      }
      at += length;
    }
    out[written++] = 0x7d; // }
    plannedAt++;
  }
  out[written++] = 0x5d; // ]
  written += out.write(after, written);
  return { json: written === out.length ? out : out.subarray(0, written), count };
}

function needsEscapes(source: Buffer, start: number, end: number): boolean {
  let escapes = 0;
  for (let i = start; i < end; i++) escapes |= needsEscape[source[i]!]!;
  return escapes !== 0;
}

/** A text as a JSON string, escaped as JSON.stringify escapes. */
function writeEscapedJsonString(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  target[at++] = quote;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    if (needsEscape[byte] === 0) {
      target[at++] = byte;
      continue;
    }
    target[at++] = backslash;
    const short = shortEscapes.get(byte);
    if (short !== undefined) {
      target[at++] = short;
    } else {
      target[at++] = 0x75; // u
      target[at++] = 0x30;
      target[at++] = 0x30;
      target[at++] = hexDigits[byte >> 4]!;
      target[at++] = hexDigits[byte & 0xf]!;
    }
  }
  target[at++] = quote;
  return at;
}
