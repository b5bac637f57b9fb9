import { sql } from 'kysely';
import type { DB } from '../../../db/connection';

/** How a column travels: each becomes one typed array parameter of an INSERT ... SELECT FROM unnest. */
export type ColumnKind = 'uuid' | 'text' | 'int' | 'bool' | 'numeric' | 'inet' | 'date' | 'text[]' | 'time';

const arrayType: Record<ColumnKind, string> = {
  uuid: 'uuid[]',
  text: 'text[]',
  int: 'int[]',
  bool: 'bool[]',
  numeric: 'numeric[]',
  inet: 'inet[]',
  date: 'date[]',
  // text[] cells cannot go through unnest (it flattens arrays): they travel as JSON text.
  'text[]': 'text[]',
  // Timestamps travel as epoch milliseconds: numbers are far cheaper to send than text.
  time: 'float8[]',
};

function quoted(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * One column as a PostgreSQL array literal, written here rather than by pg's generic per-element
 * serialiser: several times faster on millions of cells.
 */
function arrayLiteral(kind: ColumnKind, values: unknown[]): string {
  const cells = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) cells[i] = 'NULL';
    else if (kind === 'bool') cells[i] = value ? 't' : 'f';
    else if (kind === 'int' || kind === 'numeric' || kind === 'time' || kind === 'uuid' || kind === 'date') cells[i] = String(value);
    else if (kind === 'text[]') cells[i] = quoted(JSON.stringify(value));
    else cells[i] = quoted(String(value));
  }
  return `{${cells.join(',')}}`;
}

/** Rows taken out of a buffer, ready to be written. */
export interface RowBatch {
  table: string;
  names: string[];
  kinds: ColumnKind[];
  columns: unknown[][];
}

/**
 * Rows of one table, gathered column by column and written in large multi-row statements
 * (`insert ... select from unnest($1::uuid[], $2::int[], ...)`): the fast path without COPY.
 */
export class RowBuffer {
  readonly names: string[];
  private readonly kinds: ColumnKind[];
  private columns: unknown[][];
  /** Rows taken so far. */
  taken = 0;

  constructor(
    readonly table: string,
    columns: Record<string, ColumnKind>,
  ) {
    this.names = Object.keys(columns);
    this.kinds = Object.values(columns);
    this.columns = this.names.map(() => []);
  }

  /** One row, its values in the order of the columns given at construction; Date for `time`. */
  add(...values: unknown[]): void {
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      this.columns[i]!.push(this.kinds[i] === 'time' && value instanceof Date ? value.getTime() : value);
    }
  }

  /** The rows gathered since the last call; the buffer starts again empty. */
  take(): RowBatch {
    const batch = { table: this.table, names: this.names, kinds: this.kinds, columns: this.columns };
    this.taken += this.columns[0]!.length;
    this.columns = this.names.map(() => []);
    return batch;
  }

  async flush(db: DB): Promise<number> {
    return writeBatch(db, this.take());
  }
}

/** Writes a batch in statements of at most `rowsPerStatement` rows; returns the rows written. */
export async function writeBatch(db: DB, batch: RowBatch, rowsPerStatement = 10_000): Promise<number> {
  const total = batch.columns[0]!.length;
  const selected = batch.names.map((name, i) => {
    const kind = batch.kinds[i]!;
    if (kind === 'time') return sql`to_timestamp(u.${sql.ref(name)} / 1000.0)`;
    if (kind === 'text[]') return sql`array(select jsonb_array_elements_text(u.${sql.ref(name)}::jsonb))`;
    return sql`u.${sql.ref(name)}`;
  });
  const names = sql.join(batch.names.map((n) => sql.ref(n)));
  for (let start = 0; start < total; start += rowsPerStatement) {
    const params = batch.columns.map(
      (column, i) =>
        sql`${arrayLiteral(batch.kinds[i]!, column.slice(start, start + rowsPerStatement))}::${sql.raw(arrayType[batch.kinds[i]!])}`,
    );
    await sql`insert into ${sql.table(batch.table)} (${names})
      select ${sql.join(selected)} from unnest(${sql.join(params)}) as u(${names})`.execute(db);
  }
  return total;
}
