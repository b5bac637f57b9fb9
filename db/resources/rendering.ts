import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { ResourceDefinition } from './definition';

type RowsQuery = SelectQueryBuilder<any, any, any>;
type Columns = Pick<ResourceDefinition, 'columns' | 'columnTypes'>;

/**
 * The rows as the texts of their fields, in the contract's order, for a page or an export read as
 * a COPY: PostgreSQL writes each value as the wire shows it and src/formats/ writes the bytes on,
 * without this process reading a row. Numbers are the texts JavaScript writes of them: an integer
 * as it is, a `decimal` (a numeric) without the zeros its scale adds (4.50 is 4.5, 12.0 is 12); it
 * never holds more than the one decimal of the contract, so JavaScript's exponent form (beyond
 * 1e21, below 1e-6) never applies. Null stays null: an empty cell. The query's own order is kept:
 * the outer query only picks and casts its columns.
 */
export function textFieldsOf(definition: Columns, rows: RowsQuery): RawBuilder<Record<string, string | null>> {
  const fields = definition.columns.map((column) => {
    const value = sql.ref(`r.${column}`);
    return definition.columnTypes[column] === 'decimal'
      ? sql`trim_scale(${value}::numeric)::text as ${sql.id(column)}`
      : sql`${value}::text as ${sql.id(column)}`;
  });
  return sql<Record<string, string | null>>`select ${sql.join(fields)} from (${rows}) as r`;
}
