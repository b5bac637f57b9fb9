import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import type { ColumnType } from '../db/resources/definition';

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

// Dates read as the API writes them (ISO order, Paris wall-clock time), whatever the spreadsheet's
// language: a French user still sorts, filters and computes on real dates.
const numberFormats: Partial<Record<ColumnType, string>> = { date: 'yyyy-mm-dd', dateTime: 'yyyy-mm-dd hh:mm' };
const displayedLength: Partial<Record<ColumnType, number>> = { date: 10, dateTime: 16 };
const widestColumn = 60;
const narrowestColumn = 10;
// The workbook's default font (exceljs writes Calibri 11).
const defaultFont = { name: 'Calibri', family: 2, size: 11 };

/**
 * `2026-01-12` or `2026-01-12 09:05` (Paris time, as the API writes it) as the instant whose UTC
 * reading is that same wall-clock time: a spreadsheet date has no time zone, and exceljs writes the
 * UTC reading of a Date. Null when the text is not such a date.
 */
function wallClockDate(text: string): Date | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}))?$/.exec(text);
  if (!match) return null;
  const [, year, month, day, hour = '0', minute = '0'] = match;
  return new Date(Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute)));
}

/**
 * A wire value as a cell: numbers and dates typed, null an empty cell, anything else text. A text
 * is always written as a string cell, never as a formula (exceljs writes a formula only for a
 * `{ formula }` value), so `=1+1` stays the text `=1+1`: unlike the CSV, no guard prefix is needed.
 * A value that does not read as its column's type stays text rather than being lost.
 */
function cellValue(value: unknown, type: ColumnType): ExcelJS.CellValue {
  if (value === null || value === undefined) return null;
  if (type === 'integer' || type === 'decimal') {
    const number = typeof value === 'number' ? value : Number(value);
    return Number.isFinite(number) ? number : String(value);
  }
  if (type === 'date' || type === 'dateTime') return wallClockDate(String(value)) ?? String(value);
  return String(value);
}

/** Wide enough for the header and the values of the first rows, up to 60 characters (a comment may be longer). */
function columnWidth(column: SheetColumn, firstRows: readonly Record<string, unknown>[]): number {
  let widest = column.name.length;
  for (const row of firstRows) {
    const value = row[column.name];
    if (value === null || value === undefined) continue;
    widest = Math.max(widest, displayedLength[column.type] ?? String(value).length);
  }
  // Two characters of margin for the bold header and the button of a filter a user adds; at least
  // 10 (a date's width), which also keeps clear of 9, the width exceljs takes for its default and drops.
  return Math.max(Math.min(widest, widestColumn) + 2, narrowestColumn);
}

/** The stream the zip reads a worksheet's XML from (a readable-stream 2 PassThrough of archiver's). */
interface ZipEntryStream extends NodeJS.EventEmitter {
  _writableState: { needDrain: boolean };
}

/**
 * exceljs hands each committed row to the zip without waiting (its issue #734: no backpressure),
 * so rows would pile up in the zip's entry stream while a slow client reads: waiting for that
 * stream to drain makes the export follow the client's pace. It is internal to exceljs (pinned at
 * 4.4.0): a change fails here at once, and the slow-reader test holds the pace.
 */
function zipEntryStream(sheet: ExcelJS.Worksheet): ZipEntryStream {
  const entry = (sheet as unknown as { stream?: { pipes?: Partial<ZipEntryStream>[] } }).stream?.pipes?.[0];
  if (typeof entry?._writableState?.needDrain !== 'boolean' || typeof entry.once !== 'function') {
    throw new Error('exceljs internals changed: no zip entry stream behind the worksheet');
  }
  return entry as ZipEntryStream;
}

/** Resolves true once the zip has taken what was written, false if the client went away meanwhile. */
async function roomForMore(entry: ZipEntryStream, output: PassThrough): Promise<boolean> {
  if (output.destroyed) return false;
  if (!entry._writableState.needDrain) return true;
  const stopWaiting = new AbortController();
  try {
    const drained = await Promise.race([
      once(entry, 'drain', { signal: stopWaiting.signal }).then(() => true),
      once(output, 'close', { signal: stopWaiting.signal }).then(() => false),
    ]);
    return drained && !output.destroyed;
  } finally {
    stopWaiting.abort();
  }
}

// archiver, which zips the workbook, holds up to 1 MB of compressed bytes by default before it
// stops reading: 64 KB is plenty to keep the client's connection busy, and a slow client costs less.
const zipOptions = { highWaterMark: 64 * 1024 } as Partial<ExcelJS.stream.xlsx.ArchiverZipOptions>;

/** Rows of data a sheet holds: Excel's 1,048,576 rows, less the header. */
export const excelDataRowsPerSheet = 1_048_575;

export interface XlsxOptions {
  /** Rows of data per sheet before the next one starts (Excel's limit; smaller only to test it). */
  rowsPerSheet?: number;
}

async function writeWorkbook(
  output: PassThrough,
  sheetName: string,
  columns: readonly SheetColumn[],
  chunks: AsyncIterable<readonly Record<string, unknown>[]>,
  rowsPerSheet: number,
): Promise<void> {
  const rowsOf = chunks[Symbol.asyncIterator]();
  try {
    let chunk = await rowsOf.next();
    // Widths go at the top of a sheet's XML, before any row: the first chunk is all there is to measure.
    const firstRows = chunk.done ? [] : chunk.value;
    const columnDefinitions = columns.map((column) => {
      const numFmt = numberFormats[column.type];
      return { key: column.name, width: columnWidth(column, firstRows), style: numFmt ? { numFmt } : {} };
    });
    // Inline strings (no shared strings table, which would grow with the rows): memory stays flat.
    const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: output, useStyles: true, useSharedStrings: false, zip: zipOptions });
    let sheets = 0;
    const openSheet = () => {
      sheets += 1;
      // Beyond Excel's rows, the next sheet (`logins (2)`) goes on with the same header: no row is lost.
      const sheet = workbook.addWorksheet(sheets === 1 ? sheetName : `${sheetName} (${sheets})`, {
        views: [{ state: 'frozen', xSplit: 0, ySplit: 1, topLeftCell: 'A2' }],
      });
      sheet.columns = columnDefinitions;
      const header = sheet.addRow(columns.map((column) => column.name));
      // The whole font, not bold alone: a font without size or name renders oddly in some spreadsheets.
      header.font = { ...defaultFont, bold: true };
      header.commit();
      return { sheet, entry: zipEntryStream(sheet), rows: 0 };
    };
    let current = openSheet();
    while (!chunk.done) {
      for (const row of chunk.value) {
        if (current.rows === rowsPerSheet) {
          current.sheet.commit();
          current = openSheet();
        }
        current.sheet.addRow(columns.map((column) => cellValue(row[column.name], column.type))).commit();
        current.rows += 1;
      }
      if (!(await roomForMore(current.entry, output))) return;
      chunk = await rowsOf.next();
    }
    current.sheet.commit();
    await workbook.commit();
  } finally {
    // Stopped early (the client went away, a read failed): the rows' source closes (its cursor).
    await rowsOf.return?.();
  }
}

/**
 * An xlsx workbook as the API sends it: one sheet named after the resource (and more past Excel's
 * rows), a frozen bold header row of the JSON keys in their order, then the rows, each cell typed
 * by its column (numbers, dates and date-times as such, `Oui` / `Non` and other texts as text, null
 * as an empty cell), columns as wide as their first rows. Rows come in chunks and are written as
 * they come, at the client's pace, so memory stays flat whatever the volume (the zip is written as
 * it goes too).
 */
export function xlsxStream(
  sheetName: string,
  columns: readonly SheetColumn[],
  chunks: AsyncIterable<readonly Record<string, unknown>[]>,
  options: XlsxOptions = {},
): Readable {
  const output = new PassThrough();
  writeWorkbook(output, sheetName, columns, chunks, options.rowsPerSheet ?? excelDataRowsPerSheet).catch((error: unknown) =>
    output.destroy(error as Error),
  );
  return output;
}

export function xlsxAttachmentHeaders(fileName: string): Record<string, string> {
  return { 'Content-Type': xlsxMediaType, 'Content-Disposition': `attachment; filename="${fileName}"` };
}
