/*
 * Rows as the UTF-8 bytes of their values: what every output format writes from (the JSON page,
 * the CSV, the workbook). List rows come from PostgreSQL's binary COPY of their fields as texts
 * (db/resources/rendering.ts), read in place by CopyRowReader: no row becomes a JavaScript object
 * and no field a string. The few rows built in JavaScript (the summary) become a batch too.
 */

/**
 * Rows in the columns' order: field `f` of row `r` is `bytes[starts[i], ends[i])` with
 * `i = r * fieldsPerRow + f`, and null where `starts[i]` is -1.
 */
export interface RowBatch {
  readonly bytes: Buffer;
  readonly rows: number;
  readonly fieldsPerRow: number;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
}

// The binary COPY format: a signature, flags and a header extension; then each row as its number
// of fields (int16) and each field as its length (int32, -1 for null) and its bytes; -1 at the end.
const copySignature = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const copyHeaderLength = copySignature.length + 8;

// Big-endian integers read by hand: Buffer's readers check their bounds on every call, which the
// reader has done already, and cost a row's reading more than its fields.
function int16At(bytes: Buffer, at: number): number {
  const value = (bytes[at]! << 8) | bytes[at + 1]!;
  return value >= 0x8000 ? value - 0x10000 : value;
}

function int32At(bytes: Buffer, at: number): number {
  return (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
}

/**
 * Reads PostgreSQL's binary COPY output as it comes, in chunks cut anywhere: each call returns the
 * whole rows read so far, and keeps the bytes of a row cut at the chunk's end for the next call.
 * A batch's memory is its own: it stays valid after the next call.
 */
export class CopyRowReader {
  readonly #fieldsPerRow: number;
  #unread: Buffer | null = null;
  #headerRead = false;
  #trailerRead = false;

  constructor(fieldsPerRow: number) {
    this.#fieldsPerRow = fieldsPerRow;
  }

  /** The whole rows of the bytes left unread and this chunk. */
  read(chunk: Buffer): RowBatch {
    const input = this.#unread === null ? chunk : Buffer.concat([this.#unread, chunk]);
    this.#unread = null;
    const fieldsPerRow = this.#fieldsPerRow;
    let at = 0;
    if (!this.#headerRead) {
      if (input.length < copyHeaderLength) return this.#keep(input, 0);
      if (!input.subarray(0, copySignature.length).equals(copySignature)) throw new Error('not a binary COPY output');
      at = copyHeaderLength + input.readUInt32BE(copySignature.length + 4);
      if (input.length < at) return this.#keep(input, 0);
      this.#headerRead = true;
    }
    if (this.#trailerRead && at < input.length) throw new Error('bytes after the COPY trailer');
    // Each field takes at least its 4-byte length: the input bounds the number of rows.
    const room = Math.ceil((input.length - at) / (2 + 4 * fieldsPerRow)) * fieldsPerRow;
    const starts = new Int32Array(room);
    const ends = new Int32Array(room);
    let rows = 0;
    wholeRows: while (at + 2 <= input.length) {
      const fields = int16At(input, at);
      if (fields === -1) {
        this.#trailerRead = true;
        at += 2;
        break;
      }
      if (fields !== fieldsPerRow) throw new Error(`COPY row of ${fields} fields, ${fieldsPerRow} expected`);
      let cursor = at + 2;
      for (let field = 0; field < fields; field++) {
        if (cursor + 4 > input.length) break wholeRows;
        const length = int32At(input, cursor);
        cursor += 4;
        const index = rows * fieldsPerRow + field;
        if (length < 0) {
          starts[index] = -1;
          continue;
        }
        if (cursor + length > input.length) break wholeRows;
        starts[index] = cursor;
        ends[index] = cursor + length;
        cursor += length;
      }
      rows += 1;
      at = cursor;
    }
    if (at < input.length) {
      if (this.#trailerRead) throw new Error('bytes after the COPY trailer');
      this.#unread = input.subarray(at);
    }
    return { bytes: input, rows, fieldsPerRow, starts, ends };
  }

  /** Throws unless the output ended with its trailer. */
  end(): void {
    if (!this.#trailerRead) throw new Error('COPY output ended before its trailer');
  }

  #keep(input: Buffer, rows: number): RowBatch {
    this.#unread = input;
    return { bytes: input, rows, fieldsPerRow: this.#fieldsPerRow, starts: new Int32Array(0), ends: new Int32Array(0) };
  }
}

/** The rows of a whole binary COPY output (a page): one batch. */
export function rowsOfCopy(copy: Buffer, fieldsPerRow: number): RowBatch {
  const reader = new CopyRowReader(fieldsPerRow);
  const batch = reader.read(copy);
  reader.end();
  return batch;
}

/** A batch of no rows. */
export function noRows(fieldsPerRow: number): RowBatch {
  return { bytes: Buffer.alloc(0), rows: 0, fieldsPerRow, starts: new Int32Array(0), ends: new Int32Array(0) };
}

/** Rows built in JavaScript as a batch: each value as the API writes it, as text; null and undefined as null. */
export function batchOfValues(rows: readonly (readonly unknown[])[], fieldsPerRow: number): RowBatch {
  const texts: string[] = [];
  const starts = new Int32Array(rows.length * fieldsPerRow);
  const ends = new Int32Array(rows.length * fieldsPerRow);
  let length = 0;
  for (const [row, values] of rows.entries()) {
    for (let field = 0; field < fieldsPerRow; field++) {
      const value = values[field];
      const at = row * fieldsPerRow + field;
      if (value === null || value === undefined) {
        starts[at] = -1;
        continue;
      }
      const text = value instanceof Date ? value.toISOString() : String(value);
      starts[at] = length;
      length += Buffer.byteLength(text);
      ends[at] = length;
      texts.push(text);
    }
  }
  return { bytes: Buffer.from(texts.join('')), rows: rows.length, fieldsPerRow, starts, ends };
}

// Shorter runs are copied byte by byte: a native copy's call costs more than it saves on them.
const nativeCopyFrom = 48;

/** Writes `source[start, end)` at `at` in `target`; returns where it ends. */
export function copyBytes(source: Uint8Array, start: number, end: number, target: Uint8Array, at: number): number {
  if (end - start >= nativeCopyFrom) {
    target.set(source.subarray(start, end), at);
    return at + end - start;
  }
  for (let i = start; i < end; i++) target[at++] = source[i]!;
  return at;
}
