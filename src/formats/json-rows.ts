import type { ColumnType } from '../../db/resources/definition';
import { copyBytes, type RowBatch } from './row-batch';

/*
 * Rows as the JSON array the API sends, written from their values' bytes (row-batch.ts). The bytes
 * are those JSON.stringify writes of the row objects pg would have built: keys in the columns'
 * order; null as `null`; integers and decimals as their text (PostgreSQL writes them as JavaScript
 * does: db/resources/rendering.ts); every other field a JSON string, escaped as JSON.stringify
 * escapes (a quote, a backslash, the control characters, with its short forms \b \f \n \r \t).
 * UTF-8 from PostgreSQL holds no lone surrogate, the only other character JSON.stringify escapes.
 */

const quote = 0x22;
const backslash = 0x5c;
const hexDigits = Buffer.from('0123456789abcdef');
/** The short escape of each byte that has one. */
const shortEscapes = new Map([
  [0x08, 0x62], // \b
  [0x09, 0x74], // \t
  [0x0a, 0x6e], // \n
  [0x0c, 0x66], // \f
  [0x0d, 0x72], // \r
  [quote, quote],
  [backslash, backslash],
]);
/** 1 for the bytes a JSON string escapes. */
const needsEscape = new Uint8Array(256).map((_, byte) => (byte < 0x20 || byte === quote || byte === backslash ? 1 : 0));
const nullBytes = Buffer.from('null');
/** Bytes a byte becomes at most in a JSON string (`\u001f`). */
const escapedBytesPerByte = 6;

/** A resource's columns as the JSON writer needs them: each key as it opens its field, and whether it is a number. */
interface Layout {
  keys: Buffer[];
  numeric: boolean[];
}

const layouts = new WeakMap<readonly string[], Layout>();

function layoutOf(columns: readonly string[], types: Readonly<Record<string, ColumnType>>): Layout {
  let layout = layouts.get(columns);
  if (layout === undefined) {
    layout = {
      keys: columns.map((column, index) => Buffer.from(`${index === 0 ? '{' : ','}${JSON.stringify(column)}:`)),
      numeric: columns.map((column) => types[column] === 'integer' || types[column] === 'decimal'),
    };
    layouts.set(columns, layout);
  }
  return layout;
}

/** Room for the rows' JSON whatever their escapes: every value escaped at most, its quotes, the keys and punctuation. */
function roomFor(batch: RowBatch, layout: Layout): number {
  const keyBytes = layout.keys.reduce((bytes, key) => bytes + key.length, 0);
  let valueBytes = 0;
  for (let index = 0; index < batch.rows * batch.fieldsPerRow; index++) {
    const start = batch.starts[index]!;
    valueBytes += start < 0 ? nullBytes.length : escapedBytesPerByte * (batch.ends[index]! - start) + 2;
  }
  return 2 + batch.rows * (keyBytes + 2) + valueBytes;
}

/**
 * The rows of a batch as a JSON array, between `before` and `after` (the envelope around a page's
 * rows): one buffer, written once.
 */
export function jsonRows(
  definition: { columns: readonly string[]; columnTypes: Readonly<Record<string, ColumnType>> },
  batch: RowBatch,
  before: string,
  after: string,
): Buffer {
  const layout = layoutOf(definition.columns, definition.columnTypes);
  const out = Buffer.allocUnsafe(Buffer.byteLength(before) + roomFor(batch, layout) + Buffer.byteLength(after));
  let at = out.write(before, 0);
  out[at++] = 0x5b; // [
  const { bytes, fieldsPerRow, starts, ends } = batch;
  for (let row = 0; row < batch.rows; row++) {
    if (row > 0) out[at++] = 0x2c; // ,
    for (let field = 0; field < fieldsPerRow; field++) {
      const key = layout.keys[field]!;
      at = copyBytes(key, 0, key.length, out, at);
      const index = row * fieldsPerRow + field;
      const start = starts[index]!;
      if (start < 0) at = copyBytes(nullBytes, 0, nullBytes.length, out, at);
      else if (layout.numeric[field]) at = copyBytes(bytes, start, ends[index]!, out, at);
      else at = writeJsonString(bytes, start, ends[index]!, out, at);
    }
    out[at++] = 0x7d; // }
  }
  out[at++] = 0x5d; // ]
  at += out.write(after, at);
  return out.subarray(0, at);
}

/** A text as a JSON string, escaped as JSON.stringify escapes; returns where it ends. */
function writeJsonString(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  target[at++] = quote;
  let plainFrom = start;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    if (needsEscape[byte] === 0) continue;
    at = copyBytes(source, plainFrom, i, target, at);
    plainFrom = i + 1;
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
  at = copyBytes(source, plainFrom, end, target, at);
  target[at++] = quote;
  return at;
}
