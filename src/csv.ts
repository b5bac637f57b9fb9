import { Readable } from 'node:stream';
import Papa from 'papaparse';

const rowsPerChunk = 500;

function unparse(rows: unknown[][]): string {
  // escapeFormulae: a cell starting with = + - @ is prefixed with ' so a spreadsheet never runs it.
  return Papa.unparse(rows, { header: false, newline: '\r\n', escapeFormulae: true }) + '\r\n';
}

/**
 * A CSV file as the API sends it: UTF-8 with BOM, comma-separated, a header row of the JSON keys in
 * their order, null as an empty cell. Rows are read and written in chunks, so a large export keeps
 * memory flat and follows the client's pace (backpressure through the async iterator).
 */
export function csvStream(columns: readonly string[], rows: AsyncIterable<Record<string, unknown>>): Readable {
  async function* lines() {
    yield Papa.BYTE_ORDER_MARK + unparse([columns as string[]]);
    let chunk: unknown[][] = [];
    for await (const row of rows) {
      chunk.push(columns.map((column) => row[column] ?? null));
      if (chunk.length === rowsPerChunk) {
        yield unparse(chunk);
        chunk = [];
      }
    }
    if (chunk.length > 0) yield unparse(chunk);
  }
  return Readable.from(lines(), { objectMode: false });
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
