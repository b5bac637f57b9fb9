import { pipeline, type Readable, Transform, type TransformCallback } from 'node:stream';
import type { ColumnType } from '../../db/resources/definition';
import { batchOfValues, CopyRowReader, copyBytes, type RowBatch } from './row-batch';

/*
 * The CSV the API sends: UTF-8 with BOM, comma-separated, CRLF line ends, a header row of the JSON
 * keys in their order, null as an empty cell. Papa.unparse's rules with escapeFormulae, written on
 * bytes (exports run to hundreds of thousands of rows): a text starting with = + - @ tab or CR gets
 * a leading ' and quotes, so a spreadsheet never runs it; a text holding a quote, comma, line break
 * or BOM, or starting or ending with a space, is quoted with its quotes doubled; numbers are written
 * as they are. The rules read UTF-8 bytes: every character they look for is ASCII but the BOM,
 * whose three bytes never occur inside another character.
 */

/** The columns of a CSV and the type of each: numbers are written as they are, everything else as guarded text. */
export interface CsvColumns {
  readonly columns: readonly string[];
  readonly columnTypes: Readonly<Record<string, ColumnType>>;
}

const byteOrderMark = '\uFEFF';
const quote = 0x22;
const apostrophe = 0x27;
const comma = 0x2c;
const space = 0x20;
const lineFeed = 0x0a;
const carriageReturn = 0x0d;
const tab = 0x09;

function isFormulaStart(byte: number): boolean {
  return byte === 0x3d || byte === 0x2b || byte === 0x2d || byte === 0x40 || byte === tab || byte === carriageReturn;
}

// What a byte may call for: quotes (a quote, a comma, a line break) or a closer look (0xEF, the
// first byte of a BOM). One table read per byte while a text is copied.
const callsForQuotes = 1;
const maybeByteOrderMark = 2;
const byteKinds = new Uint8Array(256);
for (const byte of [quote, comma, lineFeed, carriageReturn]) byteKinds[byte] = callsForQuotes;
byteKinds[0xef] = maybeByteOrderMark;

function holdsByteOrderMark(source: Buffer, start: number, end: number): boolean {
  for (let at = start; at + 2 < end; at++) {
    if (source[at] === 0xef && source[at + 1] === 0xbb && source[at + 2] === 0xbf) return true;
  }
  return false;
}

/**
 * Writes one text cell, `source[start, end)`, at `at` in `target`; returns where it ends. The text
 * is copied as it is read, and written again quoted in the rare case it needs quotes (see the rules
 * above).
 */
function writeTextCell(source: Buffer, start: number, end: number, target: Buffer, at: number): number {
  if (start === end) return at;
  let kinds = 0;
  let written = at;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    target[written++] = byte;
    kinds |= byteKinds[byte]!;
  }
  const first = source[start]!;
  const formula = isFormulaStart(first);
  const plain = kinds === 0 || (kinds === maybeByteOrderMark && !holdsByteOrderMark(source, start, end));
  if (plain && !formula && first !== space && source[end - 1] !== space) return written;
  target[at++] = quote;
  if (formula) target[at++] = apostrophe;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    target[at++] = byte;
    if (byte === quote) target[at++] = quote;
  }
  target[at++] = quote;
  return at;
}

/** The lines of a batch's rows. A field of n bytes becomes at most 2n + 3 (quotes, apostrophe, doubled quotes) and its comma. */
function csvLines(batch: RowBatch, guarded: readonly boolean[]): Buffer {
  const { bytes, fieldsPerRow, starts, ends } = batch;
  const out = Buffer.allocUnsafe(2 * bytes.length + batch.rows * (4 * fieldsPerRow + 2));
  let at = 0;
  for (let row = 0; row < batch.rows; row++) {
    for (let field = 0; field < fieldsPerRow; field++) {
      if (field > 0) out[at++] = comma;
      const index = row * fieldsPerRow + field;
      const start = starts[index]!;
      if (start < 0) continue;
      at = guarded[field] ? writeTextCell(bytes, start, ends[index]!, out, at) : copyBytes(bytes, start, ends[index]!, out, at);
    }
    out[at++] = carriageReturn;
    out[at++] = lineFeed;
  }
  return out.subarray(0, at);
}

/** Texts are guarded and quoted; numbers are written as they are. */
function guardedColumns({ columns, columnTypes }: CsvColumns): boolean[] {
  return columns.map((column) => columnTypes[column] !== 'integer' && columnTypes[column] !== 'decimal');
}

/** The BOM and the header row: the JSON keys in their order. */
function header(columns: readonly string[]): Buffer {
  const names = batchOfValues([columns], columns.length);
  return Buffer.concat([
    Buffer.from(byteOrderMark),
    csvLines(
      names,
      columns.map(() => true),
    ),
  ]);
}

/** A list export as the CSV the API sends, from PostgreSQL's binary COPY of the rows' text fields (destroyed with the file). */
export function csvFromCopy(definition: CsvColumns, copy: Readable): Readable {
  const reader = new CopyRowReader(definition.columns.length);
  const guarded = guardedColumns(definition);
  const lines = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      try {
        const batch = reader.read(chunk);
        callback(null, batch.rows > 0 ? csvLines(batch, guarded) : undefined);
      } catch (error) {
        callback(error as Error);
      }
    },
    flush(callback: TransformCallback) {
      try {
        reader.end();
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
  });
  lines.push(header(definition.columns));
  // Either side's end ends the other: an error of the COPY fails the file, a file closed early (the
  // client went away) stops the COPY.
  return pipeline(copy, lines, () => undefined);
}

/** Rows built in JavaScript (the summary) as a whole CSV file. */
export function csvOfRows(definition: CsvColumns, rows: readonly Record<string, unknown>[]): Buffer {
  const values = rows.map((row) => definition.columns.map((column) => row[column]));
  return Buffer.concat([
    header(definition.columns),
    csvLines(batchOfValues(values, definition.columns.length), guardedColumns(definition)),
  ]);
}

/** A nested object (the `summary`) as one CSV row: keys joined with dots, in their order. */
export function flattenObject(value: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) {
      Object.assign(flat, flattenObject(inner as Record<string, unknown>, `${prefix}${key}.`));
    } else {
      flat[`${prefix}${key}`] = inner;
    }
  }
  return flat;
}

export function csvAttachmentHeaders(fileName: string): Record<string, string> {
  return {
    'Content-Type': 'text/csv; charset=utf-8',
    'Content-Disposition': `attachment; filename="${fileName}"`,
  };
}
