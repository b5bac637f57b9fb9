import type { ColumnType } from '../../../db/resources/definition';
import { copyBytes, type RowBatch } from '../row-batch';
import { columnLetters, dateSerial, escapedBytesPerByte, isNumber, writeAscii, writeText } from './cell-values';
import { cellFormat } from './workbook-xml';

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
/**
 * Rows go to zlib in pieces of this much XML: zlib deflates one in a single pass off the main
 * thread while the next is written (docs/performance.md, « The workbook »).
 */
const xmlPieceBytes = 512 * 1024;
const space = 0x20;

/** A column of a workbook: its header (the JSON key) and the type its cells get. */
export interface SheetColumn {
  readonly name: string;
  readonly type: ColumnType;
}

/** The columns of a resource's workbook, from its definition: the same names as its CSV header. */
export function sheetColumns(definition: { columns: readonly string[]; columnTypes: Readonly<Record<string, ColumnType>> }): SheetColumn[] {
  return definition.columns.map((name) => ({ name, type: definition.columnTypes[name]! }));
}

/**
 * Writes the data rows of batches as SpreadsheetML bytes. Every cell carries its reference (`B2`):
 * the format makes it optional, but readers in use require it (read-excel-file fails without). A
 * value becomes a cell typed by its column: numbers and dates as such, null no cell at all (an
 * empty cell), anything else text, which is never a formula (no cell here ever has an `<f>`), so
 * `=1+1` stays the text `=1+1`: unlike the CSV, no guard prefix is needed. A value that does not
 * read as its column's type stays text rather than being lost.
 */
export class SheetRowsWriter {
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
      at = writeAscii(String(firstRowNumber + row - from), out, at);
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
   * Takes back the memory of a piece once deflated, for the next ones: the pieces' memory is the
   * export's largest allocation (docs/performance.md, « The workbook »).
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
        at = writeAscii(String(serial), out, copyBytes(format, 0, format.length, out, at));
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
