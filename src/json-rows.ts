import type { ColumnType } from '../db/resources/definition';
import { copyBytes, copyRowsStart, int16At, int32At } from './binary-copy';

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
  /** What `around` put before and after them. */
  around: { before: string; after: string };
}

/** What a page writes before and after its rows (the envelope, whose head needs their count). */
export type AroundRows = (count: number) => { before: string; after: string };

const nothingAround: AroundRows = () => ({ before: '', after: '' });

/**
 * What the writer keeps of a resource's columns: every key as it opens its field (`{"a":`, `,"b":`),
 * as 32-bit words (little-endian, the last one of each key padded), which the writer copies four
 * bytes at a time (keys are half of a page's bytes); and whether each value is a number.
 */
interface Layout {
  /** The bytes of a row's keys, all together. */
  rowKeyBytes: number;
  keyWords: Int32Array;
  /** Where each field's key ends in `keyWords`. */
  keyWordEnds: Int32Array;
  /** How many bytes of each key's last word are the key's (1 to 4). */
  keyLastWordBytes: Int32Array;
  numeric: boolean[];
}

const layouts = new WeakMap<readonly string[], Layout>();

function layoutOf(columns: readonly string[], types: Readonly<Record<string, ColumnType>>): Layout {
  let layout = layouts.get(columns);
  if (layout === undefined) {
    const keys = columns.map((column, index) => Buffer.from(`${index === 0 ? '{' : ','}${JSON.stringify(column)}:`));
    const words: number[] = [];
    const wordEnds: number[] = [];
    const lastWordBytes: number[] = [];
    for (const key of keys) {
      const padded = Buffer.alloc(Math.ceil(key.length / 4) * 4);
      key.copy(padded);
      for (let at = 0; at < padded.length; at += 4) words.push(padded.readInt32LE(at));
      wordEnds.push(words.length);
      lastWordBytes.push(key.length - (padded.length - 4));
    }
    layout = {
      rowKeyBytes: keys.reduce((bytes, key) => bytes + key.length, 0),
      keyWords: Int32Array.from(words),
      keyWordEnds: Int32Array.from(wordEnds),
      keyLastWordBytes: Int32Array.from(lastWordBytes),
      numeric: columns.map((column) => types[column] === 'integer' || types[column] === 'decimal'),
    };
    layouts.set(columns, layout);
  }
  return layout;
}

/** The rows of a COPY output and the bytes of their JSON array without escapes, read from the fields' lengths alone. */
function measureRows(copy: Buffer, start: number, layout: Layout): { count: number; bytes: number } {
  const { rowKeyBytes: rowKeys, keyWordEnds, numeric } = layout;
  const fieldCount = keyWordEnds.length;
  const end = copy.length;
  let at = start;
  let count = 0;
  // The brackets; each row's keys, closing brace and comma (one too many: the last row has none).
  let bytes = 2;
  while (true) {
    if (at + 2 > end) throw new Error('COPY output ended before its trailer');
    const fields = int16At(copy, at);
    at += 2;
    if (fields === -1) break;
    if (fields !== fieldCount) throw new Error(`COPY row of ${fields} fields, ${fieldCount} expected`);
    count++;
    bytes += rowKeys + 2;
    for (let field = 0; field < fields; field++) {
      if (at + 4 > end) throw new Error('COPY output ended within a field');
      const length = int32At(copy, at);
      at += 4;
      if (length < 0) {
        bytes += nullBytes.length;
        continue;
      }
      if (at + length > end) throw new Error('COPY output ended within a field');
      at += length;
      bytes += numeric[field] ? length : length + 2;
    }
  }
  return { count, bytes: count > 0 ? bytes - 1 : bytes };
}

/** A page's JSON as it is written: its buffer (a larger one once escapes need room) and where the next byte goes. */
interface JsonOutput {
  bytes: Buffer;
  at: number;
}

/** The last word of a key may write up to 3 bytes past it: the value that follows overwrites them. */
const keyOverrun = 3;

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
  const start = copy === null ? 0 : copyRowsStart(copy);
  if (start === null) throw new Error('COPY output ended within its header');
  const { count, bytes } = copy === null ? { count: 0, bytes: 2 } : measureRows(copy, start, layout);
  const { before, after } = around(count);
  const planned = Buffer.byteLength(before) + bytes + Buffer.byteLength(after);
  const output: JsonOutput = { bytes: Buffer.allocUnsafe(planned + keyOverrun), at: 0 };
  output.at = output.bytes.write(before, 0);
  output.bytes[output.at++] = 0x5b; // [
  if (copy !== null) writeRows(copy, start, count, layout, output, planned);
  output.bytes[output.at++] = 0x5d; // ]
  output.at += output.bytes.write(after, output.at);
  return { json: output.bytes.subarray(0, output.at), count, around: { before, after } };
}

/**
 * Writes the rows, each `{"key":value,…}`, comma-separated. Keys and texts go four bytes at a time
 * (a DataView reads and writes a 32-bit word anywhere), half as long a page as byte by byte: a text
 * is copied as it is read, each word checked for a byte that needs an escape (below 0x20, a quote,
 * a backslash) with the bit tricks of "Bit Twiddling Hacks" (hasless, haszero: exact for whether a
 * word holds one); the rare text that needs escapes is written again, escaped.
 * The loop is a function of its own, which returns as soon as it ends: V8 optimises it while a
 * first large page runs (on-stack replacement), and code after the loop, never run by then, would
 * send each later page back to the unoptimised code as it leaves the loop.
 */
function writeRows(copy: Buffer, start: number, count: number, layout: Layout, output: JsonOutput, planned: number): void {
  const { keyWords, keyWordEnds, keyLastWordBytes, numeric } = layout;
  const fieldCount = keyWordEnds.length;
  const source = new DataView(copy.buffer, copy.byteOffset, copy.length);
  let out = output.bytes;
  let target = new DataView(out.buffer, out.byteOffset, out.length);
  let written = output.at;
  // The bytes the escapes added so far: `written - added` is where the writing would be without them.
  let added = 0;
  let at = start;
  for (let row = 0; row < count; row++) {
    at += 2;
    if (row > 0) out[written++] = 0x2c; // ,
    let word = 0;
    for (let field = 0; field < fieldCount; field++) {
      for (const lastWord = keyWordEnds[field]! - 1; word < lastWord; word++, written += 4) target.setInt32(written, keyWords[word]!, true);
      target.setInt32(written, keyWords[word++]!, true);
      written += keyLastWordBytes[field]!;
      const length = int32At(copy, at);
      at += 4;
      if (length < 0) {
        written = copyBytes(nullBytes, 0, nullBytes.length, out, written);
        continue;
      }
      const end = at + length;
      if (numeric[field]) {
        written = copyBytes(copy, at, end, out, written);
      } else {
        const fieldStart = written;
        out[written++] = quote;
        // Nonzero once a byte needs an escape.
        let escapes = 0;
        let i = at;
        for (; i + 4 <= end; i += 4, written += 4) {
          const bytes = source.getInt32(i, true);
          target.setInt32(written, bytes, true);
          const quotes = bytes ^ 0x22222222;
          const backslashes = bytes ^ 0x5c5c5c5c;
          escapes |=
            (((bytes - 0x20202020) & ~bytes) | ((quotes - 0x01010101) & ~quotes) | ((backslashes - 0x01010101) & ~backslashes)) &
            0x80808080;
        }
        for (; i < end; i++) {
          const byte = copy[i]!;
          escapes |= needsEscape[byte]!;
          out[written++] = byte;
        }
        if (escapes === 0) {
          out[written++] = quote;
        } else {
          // At most 6 bytes per byte (\u00XX) and its quotes, and what is still to come after it.
          const stillPlanned = planned - (fieldStart - added) - (length + 2);
          const needed = fieldStart + 6 * length + 2 + stillPlanned + keyOverrun;
          if (needed > out.length) {
            const larger = Buffer.allocUnsafe(Math.max(needed, out.length + (out.length >> 2)));
            out.copy(larger, 0, 0, fieldStart);
            out = larger;
            target = new DataView(out.buffer, out.byteOffset, out.length);
          }
          written = writeEscapedJsonString(copy, at, end, out, fieldStart);
          added += written - fieldStart - (length + 2);
        }
      }
      at = end;
    }
    out[written++] = 0x7d; // }
  }
  output.bytes = out;
  output.at = written;
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
