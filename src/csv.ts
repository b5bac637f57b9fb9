import { pipeline, Readable, Transform, type TransformCallback } from 'node:stream';
import type { ColumnType } from '../db/resources/definition';
import { copyBytes, copyRowsStart, ExportCopyInput, int16At, int32At } from './binary-copy';

/*
 * The CSV the API sends: UTF-8 with BOM, comma-separated, CRLF line ends, a header row of the JSON
 * keys in their order, null as an empty cell. Papa.unparse's rules with escapeFormulae, written out
 * on bytes for speed (exports run to hundreds of thousands of rows): a text starting with = + - @
 * tab or CR gets a leading ' and quotes, so a spreadsheet never runs it; a text holding a quote,
 * comma, line break or BOM, or starting or ending with a space, is quoted with its quotes doubled;
 * numbers are written as they are. The rules read UTF-8 bytes: every character they look for is
 * ASCII but the BOM, whose three bytes never occur inside another character.
 */

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
// first byte of a BOM). One table read per byte, and no branch, while a text is copied.
const needsQuotes = 1;
const maybeByteOrderMark = 2;
const byteKinds = new Uint8Array(256);
for (const byte of [quote, comma, lineFeed, carriageReturn]) byteKinds[byte] = needsQuotes;
byteKinds[0xef] = maybeByteOrderMark;

function holdsByteOrderMark(source: Buffer, start: number, end: number): boolean {
  for (let at = source.indexOf(0xef, start); at !== -1 && at + 2 < end; at = source.indexOf(0xef, at + 1)) {
    if (source[at + 1] === 0xbb && source[at + 2] === 0xbf) return true;
  }
  return false;
}

/**
 * Writes one cell, the UTF-8 bytes `source[start, end)`, at `at` in `target` (room for twice its
 * length plus three); returns where it ends. `guarded`: a text, to which the guard and the quoting
 * apply; else a number, written as it is. A text is copied as it is read, and written again quoted
 * in the rare case it needs quotes.
 */
function writeCell(source: Buffer, start: number, end: number, guarded: boolean, target: Buffer, at: number): number {
  if (!guarded || start === end) return copyBytes(source, start, end, target, at);
  let kinds = 0;
  let written = at;
  for (let i = start; i < end; i++) {
    const byte = source[i]!;
    target[written++] = byte;
    kinds |= byteKinds[byte]!;
  }
  const first = source[start]!;
  const formula = isFormulaStart(first);
  if (
    !formula &&
    first !== space &&
    source[end - 1] !== space &&
    (kinds === 0 || (kinds === maybeByteOrderMark && !holdsByteOrderMark(source, start, end)))
  ) {
    return written;
  }
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

/** A value of a row object as a cell's bytes, and whether the text rules apply to it (numbers are written as they are). */
function cellOf(value: unknown): { bytes: Buffer; guarded: boolean } {
  if (value === null || value === undefined) return { bytes: Buffer.alloc(0), guarded: false };
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return { bytes: Buffer.from(String(value)), guarded: false };
  if (value instanceof Date) return { bytes: Buffer.from(Number.isNaN(value.getTime()) ? '' : value.toISOString()), guarded: false };
  return { bytes: Buffer.from(String(value)), guarded: true };
}

/** Lines of the values, each a row of cells, in CSV bytes. */
function linesOf(rows: readonly (readonly unknown[])[]): Buffer {
  const lines: Buffer[] = [];
  for (const values of rows) {
    const cells = values.map(cellOf);
    const line = Buffer.allocUnsafe(cells.reduce((room, cell) => room + 2 * cell.bytes.length + 4, 2));
    let at = 0;
    for (const [index, cell] of cells.entries()) {
      if (index > 0) line[at++] = comma;
      at = writeCell(cell.bytes, 0, cell.bytes.length, cell.guarded, line, at);
    }
    line[at++] = carriageReturn;
    line[at++] = lineFeed;
    lines.push(line.subarray(0, at));
  }
  return Buffer.concat(lines);
}

/** The BOM and the header row: the JSON keys in their order. */
function headerOf(columns: readonly string[]): Buffer {
  return Buffer.concat([Buffer.from(byteOrderMark), linesOf([columns])]);
}

/**
 * A CSV file of row objects, their cells in the order of the columns. Rows come in chunks and
 * leave as they come (backpressure through the async iterator). For the few rows that are built
 * in JavaScript (the `summary`); list exports come from PostgreSQL's bytes (csvFromCopy).
 */
export function csvStream(columns: readonly string[], chunks: AsyncIterable<readonly Record<string, unknown>[]>): Readable {
  async function* bytes() {
    yield headerOf(columns);
    for await (const rows of chunks) yield linesOf(rows.map((row) => columns.map((column) => row[column])));
  }
  return Readable.from(bytes(), { objectMode: false });
}

// Lines leave in pieces of about this size: PostgreSQL's output comes in pieces of 8 KB when the
// export keeps up with it, and each piece that leaves costs a write to the client.
const piece = 64 * 1024;

/**
 * The CSV lines of PostgreSQL's binary COPY of the rows' fields as texts (db/resources/rendering.ts,
 * `textFieldsOf`), in the order of the columns: each field's bytes are copied as they come, the
 * texts quoted or guarded where they need it. No row becomes a JavaScript object or string.
 */
class CopyToCsv extends Transform {
  readonly #guarded: boolean[];
  readonly #input = new ExportCopyInput();
  #headerRead = false;
  #ended = false;
  /** The lines not yet sent, from the start of `#out`, written up to `#written`. */
  #out = Buffer.allocUnsafe(0);
  #written = 0;

  constructor(columns: readonly string[], types: Readonly<Record<string, ColumnType>>) {
    super();
    this.#guarded = columns.map((column) => types[column] !== 'integer' && types[column] !== 'decimal');
    this.push(headerOf(columns));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.#lines(this.#input.next(chunk));
      if (this.#written >= piece) this.#send();
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    if (this.#written > 0) this.#send();
    callback(this.#ended ? null : new Error('COPY output ended before its trailer'));
  }

  /** Sends the lines written, and writes the next ones in a fresh buffer (the one sent is the client's now). */
  #send(): void {
    this.push(this.#out.subarray(0, this.#written));
    this.#out = Buffer.allocUnsafe(0);
    this.#written = 0;
  }

  #lines(input: Buffer): void {
    let at = 0;
    if (!this.#headerRead) {
      const rowsStart = copyRowsStart(input);
      if (rowsStart === null) {
        this.#input.leaveUnread(input);
        return;
      }
      at = rowsStart;
      this.#headerRead = true;
    }
    // A field of n bytes (after its 4-byte length) becomes at most 2n + 4 bytes (comma, quotes,
    // apostrophe, doubled quotes), and a row's 2-byte count its line end: twice the input is room.
    if (this.#out.length - this.#written < 2 * input.length) {
      if (this.#written > 0) this.#send();
      this.#out = Buffer.allocUnsafe(Math.max(4 * piece, 2 * input.length));
    }
    const out = this.#out;
    const guarded = this.#guarded;
    const end = input.length;
    let written = this.#written;
    rows: while (at + 2 <= end) {
      const fields = int16At(input, at);
      if (fields === -1) {
        this.#ended = true;
        at = end;
        break;
      }
      if (fields !== guarded.length) throw new Error(`COPY row of ${fields} fields, ${guarded.length} expected`);
      const rowStart = at;
      const lineStart = written;
      at += 2;
      for (let field = 0; field < fields; field++) {
        if (at + 4 > end) {
          at = rowStart;
          written = lineStart;
          break rows;
        }
        const length = int32At(input, at);
        at += 4;
        if (field > 0) out[written++] = comma;
        if (length <= 0) continue;
        if (at + length > end) {
          at = rowStart;
          written = lineStart;
          break rows;
        }
        written = writeCell(input, at, at + length, guarded[field]!, out, written);
        at += length;
      }
      out[written++] = carriageReturn;
      out[written++] = lineFeed;
    }
    this.#written = written;
    if (at < end) this.#input.leaveUnread(input.subarray(at));
  }
}

/**
 * A list export as the API sends it: the BOM and header, then the lines of PostgreSQL's binary COPY
 * of the rows' text fields (`copy`, destroyed with the file when the client goes away).
 */
export function csvFromCopy(
  definition: { columns: readonly string[]; columnTypes: Readonly<Record<string, ColumnType>> },
  copy: Readable,
): Readable {
  // Either side's end ends the other: an error of the COPY fails the file, a file closed early (the
  // client went away) stops the COPY.
  return pipeline(copy, new CopyToCsv(definition.columns, definition.columnTypes), () => undefined);
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
