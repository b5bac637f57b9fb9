import { Readable } from 'node:stream';
import Papa from 'papaparse';

// Papa.unparse's rules with escapeFormulae, written out for speed (exports run to hundreds of
// thousands of rows): a text starting with = + - @ tab or CR gets a leading ' and quotes, so a
// spreadsheet never runs it; a text holding a quote, comma, line break or BOM, or starting or
// ending with a space, is quoted with its quotes doubled; numbers and booleans are written as is.
const formulaStart = /^[=+\-@\t\r]/;
const needsQuotes = /[\r\n",\uFEFF]|^ | $/;

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? '' : value.toISOString();
  const text = String(value);
  if (formulaStart.test(text)) return `"'${text.replace(/"/g, '""')}"`;
  return needsQuotes.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Lines of the rows, their cells in the order of the columns. */
function unparse(columns: readonly string[], rows: readonly Record<string, unknown>[]): string {
  let out = '';
  for (const row of rows) {
    let line = cell(row[columns[0]!]);
    for (let i = 1; i < columns.length; i += 1) line += ',' + cell(row[columns[i]!]);
    out += line + '\r\n';
  }
  return out;
}

/**
 * A CSV file as the API sends it: UTF-8 with BOM, comma-separated, a header row of the JSON keys in
 * their order, null as an empty cell. Rows come and go in chunks, so a large export keeps memory
 * flat and follows the client's pace (backpressure through the async iterator).
 */
export function csvStream(columns: readonly string[], chunks: AsyncIterable<readonly Record<string, unknown>[]>): Readable {
  async function* lines() {
    yield Papa.BYTE_ORDER_MARK + columns.map(cell).join(',') + '\r\n';
    for await (const rows of chunks) yield unparse(columns, rows);
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
