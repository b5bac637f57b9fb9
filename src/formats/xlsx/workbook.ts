import type { Readable } from 'node:stream';
import { Zip } from 'fflate';
import { batchOfValues, CopyRowReader, type RowBatch } from '../row-batch';
import { type SheetColumn, SheetRowsWriter } from './sheet-rows';

export { type SheetColumn, sheetColumns } from './sheet-rows';

import {
  columnWidths,
  contentTypesXml,
  measuredRows,
  packageRelationshipsXml,
  sheetEndXml,
  sheetStartXml,
  stylesXml,
  workbookRelationshipsXml,
  workbookXml,
} from './workbook-xml';
import { DeflatedPart, WorkbookOutput } from './zip-entries';

/*
 * The xlsx workbook the API sends: SpreadsheetML written from the rows' bytes (sheet-rows.ts), the
 * workbook's other parts (workbook-xml.ts), in a zip whose entries Node's zlib deflates off the main
 * thread (zip-entries.ts), laid out by fflate. The rows of a list export are those of PostgreSQL's
 * binary COPY (the CSV's own); those of the summary are built in JavaScript. A spreadsheet
 * library's object model (a Row and a Cell object per value) costs several times the CSV's CPU
 * for the same rows: docs/performance.md, « The workbook ».
 */

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
      firstBatches.push(next.value);
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
    // Stopped early (the client went away, a read failed): the rows' source closes, and so does
    // the deflate of the sheet being written.
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

/** A list export's rows, batch by batch, as PostgreSQL's binary COPY gives them. */
async function* batchesOfCopy(copy: Readable, fieldsPerRow: number): AsyncGenerator<RowBatch> {
  const reader = new CopyRowReader(fieldsPerRow);
  for await (const chunk of copy as AsyncIterable<Buffer>) {
    const batch = reader.read(chunk);
    if (batch.rows > 0) yield batch;
  }
  reader.end();
}

/** Rows built in JavaScript, chunk by chunk, each value as the API writes it. */
async function* batchesOfObjects(
  chunks: AsyncIterable<readonly Record<string, unknown>[]>,
  columns: readonly SheetColumn[],
): AsyncGenerator<RowBatch> {
  for await (const rows of chunks) {
    yield batchOfValues(
      rows.map((row) => columns.map((column) => row[column.name])),
      columns.length,
    );
  }
}

/**
 * A list export as an xlsx workbook: one sheet named after the resource (and more past Excel's
 * rows), a frozen bold header row of the JSON keys in their order, then the rows of PostgreSQL's
 * binary COPY of their text fields (`copy`, the CSV's), each cell typed by its column (numbers,
 * dates and date-times as such, `Oui` / `Non` and other texts as text, null as an empty cell),
 * columns as wide as their first rows. Rows are written as they come, at the client's pace, so
 * memory stays flat whatever the volume; a client that goes away stops the COPY.
 */
export function xlsxFromCopy(sheetName: string, columns: readonly SheetColumn[], copy: Readable, options: XlsxOptions = {}): Readable {
  return workbookStream(sheetName, columns, batchesOfCopy(copy, columns.length), options);
}

/** The same workbook from rows built in JavaScript (the summary), in chunks: their source closes when the workbook stops. */
export function xlsxFromRows(
  sheetName: string,
  columns: readonly SheetColumn[],
  chunks: AsyncIterable<readonly Record<string, unknown>[]>,
  options: XlsxOptions = {},
): Readable {
  return workbookStream(sheetName, columns, batchesOfObjects(chunks, columns), options);
}
