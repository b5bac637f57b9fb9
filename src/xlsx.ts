import { once } from 'node:events';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { type AsyncFlateStreamHandler, Zip, type ZipInputFile } from 'fflate';
import type { ColumnType } from '../db/resources/definition';
import { copyBytes, copyRowsStart, ExportCopyInput, int16At, int32At } from './binary-copy';

/*
 * The xlsx workbook the API sends, written as SpreadsheetML bytes straight from the UTF-8 bytes of
 * the values: for a list export, the fields of PostgreSQL's binary COPY (db/resources/list.ts
 * copyResourceRows, the CSV's own), so that no row becomes a JavaScript object or string; for the
 * few rows built in JavaScript (the summary), their values' bytes. A spreadsheet library's object
 * model (exceljs: a Row and a Cell object per value, a style registry, an XML builder) cost 8 times
 * the server CPU of the CSV export of the same rows (issue 17). The parts that are not rows are
 * constant but for the sheet names and the column widths. fflate lays out the zip; its deflate and
 * CRC are Node's zlib (native, the deflate off the main thread), through fflate's interface for the
 * entries of an archive.
 */

/** A column of a workbook: its header (the JSON key) and the type its cells get. */
export interface SheetColumn {
  readonly name: string;
  readonly type: ColumnType;
}

/** The columns of a resource's workbook, from its definition: the same names as its CSV header. */
export function sheetColumns(definition: { columns: readonly string[]; columnTypes: Readonly<Record<string, ColumnType>> }): SheetColumn[] {
  return definition.columns.map((name) => ({ name, type: definition.columnTypes[name]! }));
}

export const xlsxMediaType = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** Rows of data a sheet holds: Excel's 1,048,576 rows, less the header. */
export const excelDataRowsPerSheet = 1_048_575;

export interface XlsxOptions {
  /** Rows of data per sheet before the next one starts (Excel's limit; smaller only to test it). */
  rowsPerSheet?: number;
}

export function xlsxAttachmentHeaders(fileName: string): Record<string, string> {
  return { 'Content-Type': xlsxMediaType, 'Content-Disposition': `attachment; filename="${fileName}"` };
}

// ---------------------------------------------------------------------------------------------
// Rows as bytes

/**
 * Rows as the UTF-8 bytes of their values, in the columns' order: field `f` of row `r` is
 * `bytes[starts[i], ends[i])` with `i = r * columns + f`, and null where `starts[i]` is -1.
 */
interface RowBatch {
  readonly bytes: Buffer;
  readonly rows: number;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
}

/** Row objects (built in JavaScript) as a batch: their values as the API writes them, as text. */
function batchOfObjects(rows: readonly Record<string, unknown>[], columns: readonly SheetColumn[]): RowBatch {
  const texts: string[] = [];
  const starts = new Int32Array(rows.length * columns.length);
  const ends = new Int32Array(rows.length * columns.length);
  let length = 0;
  for (const [index, row] of rows.entries()) {
    for (const [field, column] of columns.entries()) {
      const value = row[column.name];
      const at = index * columns.length + field;
      if (value === null || value === undefined) {
        starts[at] = -1;
        continue;
      }
      const text = String(value);
      starts[at] = length;
      length += Buffer.byteLength(text);
      ends[at] = length;
      texts.push(text);
    }
  }
  return { bytes: Buffer.from(texts.join('')), rows: rows.length, starts, ends };
}

async function* batchesOfObjects(
  chunks: AsyncIterable<readonly Record<string, unknown>[]>,
  columns: readonly SheetColumn[],
): AsyncGenerator<RowBatch> {
  for await (const rows of chunks) yield batchOfObjects(rows, columns);
}

/**
 * The rows of PostgreSQL's binary COPY of text fields (db/resources/rendering.ts textFieldsOf), a
 * batch for each piece of output that holds whole rows: a row cut between two pieces waits for the
 * next one. A batch holds until the next one is asked for: its bytes and offsets are reused for the
 * one after (memory taken anew for each piece made V8 collect its old space every 50 ms, a fifth of
 * the export's CPU). Leaving early (the client went away) destroys the COPY, which gives up its
 * connection.
 */
async function* batchesOfCopy(copy: Readable, fieldsPerRow: number): AsyncGenerator<RowBatch> {
  const copyInput = new ExportCopyInput();
  let starts = new Int32Array(0);
  let ends = new Int32Array(0);
  let headerRead = false;
  let trailerRead = false;
  for await (const chunk of copy as AsyncIterable<Buffer>) {
    const input = copyInput.next(chunk);
    let at = 0;
    if (!headerRead) {
      const rowsStart = copyRowsStart(input);
      if (rowsStart === null) {
        copyInput.leaveUnread(input);
        continue;
      }
      at = rowsStart;
      headerRead = true;
    }
    // Each field takes at least its 4-byte length: the input bounds the number of rows.
    const room = Math.ceil((input.length - at) / (2 + 4 * fieldsPerRow)) * fieldsPerRow;
    if (starts.length < room) {
      starts = new Int32Array(2 * room);
      ends = new Int32Array(2 * room);
    }
    let rows = 0;
    wholeRows: while (at + 2 <= input.length) {
      const fields = int16At(input, at);
      if (fields === -1) {
        trailerRead = true;
        at = input.length;
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
    if (at < input.length) copyInput.leaveUnread(input.subarray(at));
    if (rows > 0) yield { bytes: input, rows, starts, ends };
  }
  if (!trailerRead) throw new Error('COPY output ended before its trailer');
}

/** A batch that outlives the next one (batchesOfCopy reuses its memory): a copy of its own. */
function keptBatch(batch: RowBatch, columns: number): RowBatch {
  const fields = batch.rows * columns;
  return { bytes: Buffer.from(batch.bytes), rows: batch.rows, starts: batch.starts.slice(0, fields), ends: batch.ends.slice(0, fields) };
}

// ---------------------------------------------------------------------------------------------
// SpreadsheetML of the rows

const spreadsheetNamespace = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const relationshipsNamespace = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const packageRelationshipsNamespace = 'http://schemas.openxmlformats.org/package/2006/relationships';
const xmlDeclaration = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

/**
 * Indexes of the cell formats of styles.xml (`s` of a cell). Dates read as the API writes them (ISO
 * order, Paris wall-clock time), whatever the spreadsheet's language: a French user still sorts,
 * filters and computes on real dates. The header is bold, in the whole font (a font without size
 * or name renders oddly in some spreadsheets).
 */
const cellFormat = { date: 1, dateTime: 2, header: 3 } as const;

const stylesXml = `${xmlDeclaration}<styleSheet xmlns="${spreadsheetNamespace}">\
<numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/><numFmt numFmtId="165" formatCode="yyyy-mm-dd hh:mm"/></numFmts>\
<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>\
<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>\
<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>\
<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>\
<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>\
<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>\
<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>\
<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>`;

const packageRelationshipsXml = `${xmlDeclaration}<Relationships xmlns="${packageRelationshipsNamespace}">\
<Relationship Id="rId1" Type="${relationshipsNamespace}/officeDocument" Target="xl/workbook.xml"/></Relationships>`;

function contentTypesXml(sheets: number): string {
  const worksheets = Array.from(
    { length: sheets },
    (_, index) =>
      `<Override PartName="/xl/worksheets/sheet${index + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`,
  ).join('');
  return `${xmlDeclaration}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">\
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>\
<Default Extension="xml" ContentType="application/xml"/>\
<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>\
<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>${worksheets}</Types>`;
}

function workbookXml(sheetNames: readonly string[]): string {
  const sheets = sheetNames
    .map((name, index) => `<sheet name="${escapeXmlText(name)}" sheetId="${index + 1}" r:id="rId${index + 1}"/>`)
    .join('');
  return `${xmlDeclaration}<workbook xmlns="${spreadsheetNamespace}" xmlns:r="${relationshipsNamespace}"><bookViews><workbookView/></bookViews><sheets>${sheets}</sheets></workbook>`;
}

function workbookRelationshipsXml(sheets: number): string {
  const worksheets = Array.from(
    { length: sheets },
    (_, index) =>
      `<Relationship Id="rId${index + 1}" Type="${relationshipsNamespace}/worksheet" Target="worksheets/sheet${index + 1}.xml"/>`,
  ).join('');
  return `${xmlDeclaration}<Relationships xmlns="${packageRelationshipsNamespace}">${worksheets}\
<Relationship Id="rId${sheets + 1}" Type="${relationshipsNamespace}/styles" Target="styles.xml"/></Relationships>`;
}

const ascii = (text: string) => Buffer.from(text, 'latin1');
const rowStart = ascii('<row r="');
const rowStartEnd = ascii('">');
const rowEnd = ascii('</row>');
const numberStart = ascii('"><v>');
const dateStart = ascii(`" s="${cellFormat.date}"><v>`);
const dateTimeStart = ascii(`" s="${cellFormat.dateTime}"><v>`);
const valueEnd = ascii('</v></c>');
const textStart = ascii('" t="inlineStr"><is><t>');
const spacedTextStart = ascii('" t="inlineStr"><is><t xml:space="preserve">');
const textEnd = ascii('</t></is></c>');
// The most bytes a cell adds to its value's (its reference up to 3 letters and 7 digits included).
const cellOverhead = 80;
// A value's byte becomes at most 7 (`_x001F_` for a control character).
const escapedBytesPerByte = 7;
/**
 * Rows go to zlib in pieces of 512 KB of XML, up to 2 of them waiting (see DeflatedPart.writePiece):
 * zlib deflates one in a single pass off the main thread while the next is written. A buffer for
 * each batch of COPY output (some 150 KB), under the stream's 'drain', left zlib waiting for the
 * main thread and the main thread for zlib (an export 10% slower). 1 and 2 MB pieces measured the
 * same as 512 KB, for more memory and more of the COPY read ahead of a reader who stops reading.
 */
const xmlPieceBytes = 512 * 1024;
const queuedPieces = 2;

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

function writeAscii(text: string, target: Buffer, at: number): number {
  for (let i = 0; i < text.length; i++) target[at++] = text.charCodeAt(i);
  return at;
}

/**
 * Writes the decimal digits of a non-negative integer at `at`; returns where they end. Not through
 * String(): V8 keeps the strings of the numbers it converts in a cache that outlives young-generation
 * collections, so that each row's number and date went to the old generation, some 11 MB of garbage
 * per workbook export of quiz-answers (measured with the heap profiler's promoted objects).
 */
function writeDigits(value: number, target: Buffer, at: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  for (let i = at + digits - 1, rest = value; i >= at; i--, rest = Math.floor(rest / 10)) target[i] = 0x30 + (rest % 10);
  return at + digits;
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
function writeText(source: Uint8Array, start: number, end: number, target: Buffer, at: number): number {
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
function isNumber(source: Uint8Array, start: number, end: number): boolean {
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
function dateSerial(source: Uint8Array, start: number, end: number, withTime: boolean): number | null {
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
function columnLetters(index: number): string {
  let letters = '';
  for (let rest = index + 1; rest > 0; rest = Math.floor((rest - 1) / 26)) {
    letters = String.fromCharCode(65 + ((rest - 1) % 26)) + letters;
  }
  return letters;
}

/**
 * Writes the data rows of batches as SpreadsheetML bytes. Every cell carries its reference (`B2`):
 * the format makes it optional, but readers in use require it (read-excel-file fails without). A
 * value becomes a cell typed by its column: numbers and dates as such, null no cell at all (an
 * empty cell), anything else text, which is never a formula (no cell here ever has an `<f>`), so
 * `=1+1` stays the text `=1+1`: unlike the CSV, no guard prefix is needed. A value that does not
 * read as its column's type stays text rather than being lost.
 */
class SheetRowsWriter {
  readonly #types: readonly ColumnType[];
  /** `<c r="B` of each column, its row number to follow. */
  readonly #cellStarts: readonly Buffer[];
  /** Memory of pieces that zlib has deflated, for the next ones (see `reuse`). */
  readonly #free: ArrayBuffer[] = [];
  /** The piece being filled, up to `#at`. */
  #piece: Buffer = Buffer.alloc(0);
  #at = 0;

  constructor(columns: readonly SheetColumn[]) {
    this.#types = columns.map((column) => column.type);
    this.#cellStarts = columns.map((_, index) => ascii(`<c r="${columnLetters(index)}`));
  }

  /**
   * Writes rows `from` to `to` (excluded) of the batch, the first numbered `firstRowNumber`, into
   * the piece being filled; returns the pieces that filled up on the way, to deflate. A piece is
   * the caller's until it gives it back to `reuse`: zlib holds what it is given until deflated.
   */
  rows(batch: RowBatch, from: number, to: number, firstRowNumber: number): Buffer[] {
    const columns = this.#types.length;
    const source = batch.bytes;
    const full: Buffer[] = [];
    let out = this.#piece;
    let at = this.#at;
    for (let row = from; row < to; row++) {
      // Room for the row's values escaped (its fields lie together in the source) and its markup.
      let first = -1;
      let last = -1;
      for (let field = row * columns; field < (row + 1) * columns; field++) {
        if (batch.starts[field]! < 0) continue;
        if (first < 0) first = batch.starts[field]!;
        last = batch.ends[field]!;
      }
      const room = escapedBytesPerByte * (last - first) + (columns + 1) * cellOverhead;
      if (at + room > out.length) {
        if (at > 0) full.push(out.subarray(0, at));
        out = this.#take(room);
        at = 0;
      }
      at = copyBytes(rowStart, 0, rowStart.length, out, at);
      // The row's number, written once and copied into each cell's reference.
      const numberStart = at;
      at = writeDigits(firstRowNumber + row - from, out, at);
      const numberEnd = at;
      at = copyBytes(rowStartEnd, 0, rowStartEnd.length, out, at);
      for (let field = 0; field < columns; field++) {
        const start = batch.starts[row * columns + field]!;
        if (start < 0) continue;
        const end = batch.ends[row * columns + field]!;
        const cellStart = this.#cellStarts[field]!;
        at = copyBytes(out, numberStart, numberEnd, out, copyBytes(cellStart, 0, cellStart.length, out, at));
        at = this.#cell(this.#types[field]!, source, start, end, out, at);
      }
      at = copyBytes(rowEnd, 0, rowEnd.length, out, at);
    }
    this.#piece = out;
    this.#at = at;
    return full;
  }

  /** The piece being filled, as it stands (null when empty): the sheet ends. */
  flush(): Buffer | null {
    if (this.#at === 0) return null;
    const piece = this.#piece.subarray(0, this.#at);
    this.#piece = Buffer.alloc(0);
    this.#at = 0;
    return piece;
  }

  /**
   * Takes back the memory of a piece once deflated: memory taken anew for each piece of rows made V8
   * collect its old space every 50 ms (a third more bytes than the CSV's whole output go through).
   */
  reuse(piece: Buffer): void {
    this.#free.push(piece.buffer as ArrayBuffer);
  }

  #take(room: number): Buffer {
    const free = this.#free.pop();
    return free !== undefined && free.byteLength >= room ? Buffer.from(free) : Buffer.allocUnsafeSlow(Math.max(room, xmlPieceBytes));
  }

  /** The rest of a cell after its reference: its format, type and value. */
  #cell(type: ColumnType, source: Uint8Array, start: number, end: number, out: Buffer, at: number): number {
    if (type === 'integer' || type === 'decimal') {
      if (isNumber(source, start, end)) {
        at = copyBytes(source, start, end, out, copyBytes(numberStart, 0, numberStart.length, out, at));
        return copyBytes(valueEnd, 0, valueEnd.length, out, at);
      }
    } else if (type === 'date' || type === 'dateTime') {
      const serial = dateSerial(source, start, end, type === 'dateTime');
      if (serial !== null) {
        const format = type === 'date' ? dateStart : dateTimeStart;
        // JSON.stringify writes a number as String() does, without V8's number-to-string cache (see writeDigits).
        at = writeAscii(JSON.stringify(serial), out, copyBytes(format, 0, format.length, out, at));
        return copyBytes(valueEnd, 0, valueEnd.length, out, at);
      }
    }
    // Spaces at a text's ends are kept: an XML reader may drop them otherwise.
    const spaced = start < end && (source[start]! <= space || source[end - 1]! <= space);
    const opening = spaced ? spacedTextStart : textStart;
    at = writeText(source, start, end, out, copyBytes(opening, 0, opening.length, out, at));
    return copyBytes(textEnd, 0, textEnd.length, out, at);
  }
}

/** A text as the content of an element or of an attribute in double quotes (never holding `"`, here). */
function escapeXmlText(text: string): string {
  const bytes = Buffer.from(text);
  const out = Buffer.allocUnsafe(bytes.length * escapedBytesPerByte);
  return out.subarray(0, writeText(bytes, 0, bytes.length, out, 0)).toString();
}

const displayedLength: Partial<Record<ColumnType, number>> = { date: 10, dateTime: 16 };
const widestColumn = 60;
const narrowestColumn = 10;
/** Rows whose values size the columns: the widths go at the top of a sheet, before any row. */
const measuredRows = 1000;

/** Characters of the UTF-8 text `source[start, end)`: its bytes but the continuation bytes. */
function characters(source: Uint8Array, start: number, end: number): number {
  let count = 0;
  for (let at = start; at < end; at++) if ((source[at]! & 0xc0) !== 0x80) count++;
  return count;
}

/** Wide enough for the header and the values of the first rows, up to 60 characters (a comment may be longer). */
function columnWidths(columns: readonly SheetColumn[], firstBatches: readonly RowBatch[]): number[] {
  return columns.map((column, field) => {
    let widest = column.name.length;
    let rows = 0;
    for (const batch of firstBatches) {
      for (let row = 0; row < batch.rows && rows < measuredRows; row++, rows++) {
        const start = batch.starts[row * columns.length + field]!;
        if (start < 0) continue;
        const end = batch.ends[row * columns.length + field]!;
        widest = Math.max(widest, displayedLength[column.type] ?? characters(batch.bytes, start, end));
      }
    }
    // Two characters of margin for the bold header and the button of a filter a user adds; at least
    // 10, a date's width.
    return Math.max(Math.min(widest, widestColumn) + 2, narrowestColumn);
  });
}

/**
 * The start of every sheet of a workbook, up to its first row of data: the header row frozen at
 * the top, the columns' widths (and the date formats of the date columns, for the cells a user
 * adds), then the bold header.
 */
function sheetStartXml(columns: readonly SheetColumn[], widths: readonly number[]): string {
  const cols = columns
    .map((column, index) => {
      const style = column.type === 'date' || column.type === 'dateTime' ? ` style="${cellFormat[column.type]}"` : '';
      return `<col min="${index + 1}" max="${index + 1}" width="${widths[index]}"${style} customWidth="1"/>`;
    })
    .join('');
  const header = columns
    .map(
      (column, index) =>
        `<c r="${columnLetters(index)}1" s="${cellFormat.header}" t="inlineStr"><is><t>${escapeXmlText(column.name)}</t></is></c>`,
    )
    .join('');
  return `${xmlDeclaration}<worksheet xmlns="${spreadsheetNamespace}" xmlns:r="${relationshipsNamespace}">\
<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>\
<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews><sheetFormatPr defaultRowHeight="15"/>\
<cols>${cols}</cols><sheetData><row r="1">${header}</row>`;
}

const sheetEndXml = '</sheetData></worksheet>';

// ---------------------------------------------------------------------------------------------
// The zip

/**
 * Deflate level of the parts. Level 1 deflates SpreadsheetML at about 500 MB/s (off the main
 * thread) and zips a sheet to about a ninth of its size; zlib's default level 6 saves a fifth of
 * the file for 3 times the time.
 */
const compressionLevel = 1;
// An output buffer that holds a whole piece deflated (XML deflates to about an eighth), so that a
// piece takes zlib one pass.
const deflateOptions: zlib.ZlibOptions = { level: compressionLevel, chunkSize: 256 * 1024 };

const maxPartBytes = 0xffff_ffff;

// A gzip member is a 10-byte header (Node's zlib writes no name nor comment), the raw deflate a zip
// entry holds, and an 8-byte trailer: the CRC-32 of the data, then its size (both little-endian).
const gzipHeaderBytes = 10;
const gzipTrailerBytes = 8;

/**
 * One part of the workbook as a zip entry that fflate lays out: deflated by Node's zlib off the main
 * thread. zlib writes it as gzip, whose trailer carries the CRC-32 that a zip entry needs: zlib
 * computes it off the main thread too (zlib.crc32 on the main thread took a tenth of its time), and
 * the entry gets the deflate between the header and the trailer.
 */
class DeflatedPart implements ZipInputFile {
  readonly compression = 8;
  // Bits 1 and 2 of the zip's flags: the deflate's speed (3, "super fast", for level 1).
  readonly flag = 3;
  readonly mtime = new Date();
  size = 0;
  crc = 0;
  ondata?: AsyncFlateStreamHandler;
  readonly #deflate = zlib.createGzip(deflateOptions);
  #headerToSkip = gzipHeaderBytes;
  /** The last bytes of zlib's output so far, held back until more come: at the end, the trailer. */
  #held: Buffer = Buffer.alloc(0);
  /** Resolves once the deflate is closed: ended, or stopped with the workbook. */
  readonly #closed: Promise<unknown>;
  /** Pieces of rows given to zlib and not deflated yet, oldest first: each resolves once deflated. */
  readonly #queued: Promise<void>[] = [];

  constructor(readonly filename: string) {
    this.#deflate.on('data', (bytes: Buffer) => this.#gzipped(bytes));
    this.#deflate.on('end', () => {
      this.crc = this.#held.readUInt32LE(0);
      this.ondata?.(null, new Uint8Array(0), true);
    });
    this.#closed = once(this.#deflate, 'close').catch(() => undefined);
  }

  /**
   * Deflates a piece of rows (SheetRowsWriter), then waits while zlib holds more than `queuedPieces`
   * of them: it deflates one while the next is written, and the rows' source waits with the writer.
   * `deflated` is called once zlib is done with the piece's memory.
   */
  async writePiece(piece: Buffer, deflated: () => void): Promise<void> {
    let resolve!: () => void;
    this.#queued.push(new Promise<void>((settle) => (resolve = settle)));
    this.write(piece, () => {
      deflated();
      resolve();
    });
    while (this.#queued.length > queuedPieces) await Promise.race([this.#queued.shift(), this.#closed]);
  }

  /** Deflates the bytes; `deflated` is called once zlib is done with them. */
  write(bytes: Buffer | string, deflated?: () => void): void {
    const buffer = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    this.size += buffer.length;
    // fflate writes no ZIP64: past 4 GiB a part's sizes would be wrong. A sheet's 1,048,575 rows
    // reach it only at 4 KB of XML each (an export's rows take 1 KB): a failed file, never a corrupt one.
    if (this.size > maxPartBytes) throw new Error(`${this.filename} exceeds the 4 GiB of a zip entry without ZIP64`);
    this.#deflate.write(buffer, deflated);
  }

  end(text: string): void {
    this.write(text);
    this.#deflate.end();
  }

  terminate(): void {
    this.#deflate.destroy();
  }

  /** Passes zlib's gzip output on without its header, holding back the last 8 bytes (the trailer, once it ends). */
  #gzipped(output: Buffer): void {
    let bytes = output;
    if (this.#headerToSkip > 0) {
      const skipped = Math.min(this.#headerToSkip, bytes.length);
      bytes = bytes.subarray(skipped);
      this.#headerToSkip -= skipped;
    }
    if (bytes.length === 0) return;
    if (bytes.length < gzipTrailerBytes) {
      bytes = Buffer.concat([this.#held, bytes]);
      if (bytes.length <= gzipTrailerBytes) {
        this.#held = bytes;
        return;
      }
    } else this.#pass(this.#held);
    this.#pass(bytes.subarray(0, bytes.length - gzipTrailerBytes));
    this.#held = bytes.subarray(bytes.length - gzipTrailerBytes);
  }

  #pass(bytes: Buffer): void {
    // zlib's output is never over a SharedArrayBuffer.
    if (bytes.length > 0) this.ondata?.(null, bytes as Buffer<ArrayBuffer>, false);
  }
}

/**
 * The workbook's bytes as a stream that reads at its reader's pace: the writing waits on `room()`
 * whenever the stream holds more than it wants, and the rows' source waits with it.
 */
class WorkbookOutput extends Readable {
  #wanted: (() => void) | null = null;

  constructor(private readonly stopped: () => void) {
    // 64 KB of zipped workbook is plenty to keep the client's connection busy.
    super({ highWaterMark: 64 * 1024 });
  }

  override _read(): void {
    this.#wanted?.();
    this.#wanted = null;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stopped();
    this.#wanted?.();
    callback(error);
  }

  /** Resolves once the reader wants more bytes or has gone away (`destroyed` then says so). */
  room(): Promise<void> {
    if (this.destroyed || this.readableLength < this.readableHighWaterMark) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wanted = resolve;
    });
  }
}

async function writeWorkbook(
  output: WorkbookOutput,
  zip: Zip,
  sheetName: string,
  columns: readonly SheetColumn[],
  batches: AsyncGenerator<RowBatch>,
  rowsPerSheet: number,
): Promise<void> {
  let sheet: DeflatedPart | null = null;
  try {
    // The first rows, to size the columns.
    const firstBatches: RowBatch[] = [];
    let next = await batches.next();
    for (let rows = 0; !next.done; next = await batches.next()) {
      firstBatches.push(keptBatch(next.value, columns.length));
      rows += next.value.rows;
      if (rows >= measuredRows) break;
    }
    const sheetStart = sheetStartXml(columns, columnWidths(columns, firstBatches));
    const rowsWriter = new SheetRowsWriter(columns);
    const sheetNames: string[] = [];
    const openSheet = () => {
      // Beyond Excel's rows, the next sheet (`logins (2)`) goes on with the same header: no row is lost.
      sheetNames.push(sheetNames.length === 0 ? sheetName : `${sheetName} (${sheetNames.length + 1})`);
      const part = new DeflatedPart(`xl/worksheets/sheet${sheetNames.length}.xml`);
      zip.add(part);
      part.write(sheetStart);
      return part;
    };
    sheet = openSheet();
    let rowsInSheet = 0;
    const deflate = async (piece: Buffer | null) => {
      if (piece !== null) await sheet!.writePiece(piece, () => rowsWriter.reuse(piece));
    };
    const write = async (batch: RowBatch) => {
      for (let from = 0; from < batch.rows; ) {
        if (rowsInSheet === rowsPerSheet) {
          await deflate(rowsWriter.flush());
          sheet!.end(sheetEndXml);
          sheet = openSheet();
          rowsInSheet = 0;
        }
        const to = Math.min(batch.rows, from + rowsPerSheet - rowsInSheet);
        // Row 1 is the header.
        for (const piece of rowsWriter.rows(batch, from, to, rowsInSheet + 2)) await deflate(piece);
        rowsInSheet += to - from;
        from = to;
      }
      await output.room();
    };
    for (const batch of firstBatches) await write(batch);
    if (!next.done) {
      for (next = await batches.next(); !next.done && !output.destroyed; next = await batches.next()) await write(next.value);
    }
    if (output.destroyed) return;
    await deflate(rowsWriter.flush());
    sheet.end(sheetEndXml);
    sheet = null;
    const parts: [string, string][] = [
      ['xl/workbook.xml', workbookXml(sheetNames)],
      ['xl/_rels/workbook.xml.rels', workbookRelationshipsXml(sheetNames.length)],
      ['xl/styles.xml', stylesXml],
      ['_rels/.rels', packageRelationshipsXml],
      ['[Content_Types].xml', contentTypesXml(sheetNames.length)],
    ];
    for (const [name, xml] of parts) {
      const part = new DeflatedPart(name);
      zip.add(part);
      part.end(xml);
    }
    zip.end();
  } finally {
    // Stopped early (the client went away, a read failed): the rows' source closes (the COPY or
    // the cursor), and so does the deflate of the sheet being written.
    sheet?.terminate();
    await batches.return(undefined);
  }
}

function workbookStream(
  sheetName: string,
  columns: readonly SheetColumn[],
  batches: AsyncGenerator<RowBatch>,
  options: XlsxOptions,
): Readable {
  const zip = new Zip();
  const output = new WorkbookOutput(() => zip.terminate());
  zip.ondata = (error, bytes, final) => {
    if (output.destroyed) return;
    if (error) return void output.destroy(error);
    output.push(bytes);
    if (final) output.push(null);
  };
  writeWorkbook(output, zip, sheetName, columns, batches, options.rowsPerSheet ?? excelDataRowsPerSheet).catch((error: unknown) =>
    output.destroy(error as Error),
  );
  return output;
}

/**
 * A list export as an xlsx workbook: one sheet named after the resource (and more past Excel's
 * rows), a frozen bold header row of the JSON keys in their order, then the rows of PostgreSQL's
 * binary COPY of their text fields (`copy`, from copyResourceRows, the CSV's), each cell typed by
 * its column (numbers, dates and date-times as such, `Oui` / `Non` and other texts as text, null as
 * an empty cell), columns as wide as their first rows. Rows are written as they come, at the
 * client's pace, so memory stays flat whatever the volume (the zip is written as it goes too); a
 * client that goes away stops the COPY.
 */
export function xlsxFromCopy(sheetName: string, columns: readonly SheetColumn[], copy: Readable, options: XlsxOptions = {}): Readable {
  return workbookStream(sheetName, columns, batchesOfCopy(copy, columns.length), options);
}

/** The same workbook from row objects built in JavaScript (the `summary`), in chunks: its source closes when the workbook stops. */
export function xlsxStream(
  sheetName: string,
  columns: readonly SheetColumn[],
  chunks: AsyncIterable<readonly Record<string, unknown>[]>,
  options: XlsxOptions = {},
): Readable {
  return workbookStream(sheetName, columns, batchesOfObjects(chunks, columns), options);
}
