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
  /** `[{…},{…}]`: the rows in JSON. */
  json: Buffer;
  /** How many rows it holds. */
  count: number;
}

/** What the writer keeps of a resource's columns: each key as it opens its field, and whether the value is a number. */
interface Layout {
  keys: Buffer[];
  numeric: boolean[];
  /** The longest key, with its brace or comma: room to reserve before each field. */
  longestKey: number;
}

const layouts = new WeakMap<readonly string[], Layout>();

function layoutOf(columns: readonly string[], types: Readonly<Record<string, ColumnType>>): Layout {
  let layout = layouts.get(columns);
  if (layout === undefined) {
    const keys = columns.map((column, index) => Buffer.from(`${index === 0 ? '{' : ','}${JSON.stringify(column)}:`));
    layout = {
      keys,
      numeric: columns.map((column) => types[column] === 'integer' || types[column] === 'decimal'),
      longestKey: Math.max(...keys.map((key) => key.length)),
    };
    layouts.set(columns, layout);
  }
  return layout;
}

/** The rows of a whole binary COPY output (`copy`), in JSON. */
export function jsonRowsFromCopy(
  definition: { columns: readonly string[]; columnTypes: Readonly<Record<string, ColumnType>> },
  copy: Buffer,
): JsonRows {
  const { keys, numeric, longestKey } = layoutOf(definition.columns, definition.columnTypes);
  let at = copyRowsStart(copy);
  if (at === null) throw new Error('COPY output ended within its header');
  // Room for the common case (a few escapes): grown when a field could not fit.
  let out = Buffer.allocUnsafe(Math.ceil(copy.length * 1.25) + 64 * longestKey);
  let written = 0;
  const reserve = (bytes: number) => {
    if (written + bytes <= out.length) return;
    const larger = Buffer.allocUnsafe(Math.max(2 * out.length, written + bytes));
    out.copy(larger, 0, 0, written);
    out = larger;
  };
  const end = copy.length;
  let count = 0;
  out[written++] = 0x5b; // [
  while (true) {
    if (at + 2 > end) throw new Error('COPY output ended before its trailer');
    const fields = copy.readInt16BE(at);
    at += 2;
    if (fields === -1) break;
    if (fields !== keys.length) throw new Error(`COPY row of ${fields} fields, ${keys.length} expected`);
    if (count > 0) {
      reserve(1);
      out[written++] = 0x2c; // ,
    }
    count++;
    for (let field = 0; field < fields; field++) {
      const length = copy.readInt32BE(at);
      at += 4;
      // The key, then at most 6 bytes per byte of the value (\u00XX), its quotes, and the closing brace.
      reserve(longestKey + (length < 0 ? 4 : 6 * length + 2) + 1);
      written = copyBytes(keys[field]!, 0, keys[field]!.length, out, written);
      if (length < 0) {
        written = copyBytes(nullBytes, 0, nullBytes.length, out, written);
        continue;
      }
      if (at + length > end) throw new Error('COPY output ended within a field');
      written = numeric[field] ? copyBytes(copy, at, at + length, out, written) : writeJsonString(copy, at, at + length, out, written);
      at += length;
    }
    out[written++] = 0x7d; // }
  }
  reserve(1);
  out[written++] = 0x5d; // ]
  return { json: out.subarray(0, written), count };
}

/** A text as a JSON string: copied as it is read, and written again escaped in the rare case it holds a byte to escape. */
function writeJsonString(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  target[at++] = quote;
  const opened = at;
  let escapes = 0;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    target[at++] = byte;
    escapes |= needsEscape[byte]!;
  }
  if (escapes !== 0) {
    at = opened;
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
  }
  target[at++] = quote;
  return at;
}
