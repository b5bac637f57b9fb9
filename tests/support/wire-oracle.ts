import Papa from 'papaparse';
import type { DB } from '../../db/connection';
import type { ResourceDefinition, ResourceFilter } from '../../db/resources/definition';

/*
 * The CSV written the plain way, kept as the oracle of tests/resources.rendering.test.ts: rows read
 * as objects through Kysely, written cell by cell by the rules of docs/decisions.md#files, which
 * src/formats/csv.ts applies to PostgreSQL's COPY bytes.
 */

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

function unparse(columns: readonly string[], rows: readonly Record<string, unknown>[]): string {
  let out = '';
  for (const row of rows) {
    let line = cell(row[columns[0]!]);
    for (let i = 1; i < columns.length; i += 1) line += ',' + cell(row[columns[i]!]);
    out += line + '\r\n';
  }
  return out;
}

/** The CSV file of the rows, as the server sent it before. */
export function oracleCsv(columns: readonly string[], rows: readonly Record<string, unknown>[]): Buffer {
  return Buffer.from(Papa.BYTE_ORDER_MARK + columns.map(cell).join(',') + '\r\n' + unparse(columns, rows));
}

/** Every row of an export (up to the cap), read as objects through Kysely. */
export async function oracleExportRows(db: DB, definition: ResourceDefinition, filter: ResourceFilter, cap: number | null) {
  const rows = definition.select(db, filter);
  return (await (cap === null ? rows : rows.limit(cap)).execute()) as Record<string, unknown>[];
}
