import {
  AliasNode,
  ColumnNode,
  IdentifierNode,
  type OperationNode,
  type RawBuilder,
  RawNode,
  ReferenceNode,
  SelectionNode,
  type SelectQueryBuilder,
  SelectQueryNode,
  sql,
} from 'kysely';
import type { ColumnType, ResourceDefinition } from './definition';

type RowsQuery = SelectQueryBuilder<any, any, any>;
type Columns = Pick<ResourceDefinition, 'columns' | 'columnTypes'>;

/**
 * The rows as the texts of their fields, in the contract's order, for an export: PostgreSQL writes
 * each value as the wire shows it and src/formats/csv.ts passes the bytes on (quoting the texts that need
 * it), without this process reading a row. Numbers are the texts JavaScript writes of them: an
 * integer as it is, a `decimal` (a numeric) without the zeros its scale adds (4.50 is 4.5, 12.0 is
 * 12); it never holds more than the one decimal of the contract, so JavaScript's exponent form
 * (beyond 1e21, below 1e-6) never applies. Null stays null: an empty cell.
 *
 * The casts go into the query's own select list when it selects the columns and nothing else, in
 * their order (every resource's page and export): PostgreSQL then plans one query, not a query
 * around a subquery, which cost 50-90 µs of planning per 100-row page of `users` (about 5% of the
 * page's work in PostgreSQL). Otherwise the query is wrapped and its columns picked by name.
 */
export function textFieldsOf(definition: Columns, rows: RowsQuery): RawBuilder<Record<string, string | null>> {
  const castInPlace = withTextSelections(rows.toOperationNode(), definition);
  if (castInPlace !== null) return sql<Record<string, string | null>>`${{ toOperationNode: () => castInPlace }}`;
  const fields = definition.columns.map((column) => {
    const value = sql.ref(`r.${column}`);
    return definition.columnTypes[column] === 'decimal'
      ? sql`trim_scale(${value}::numeric)::text as ${sql.id(column)}`
      : sql`${value}::text as ${sql.id(column)}`;
  });
  return sql<Record<string, string | null>>`select ${sql.join(fields)} from (${rows}) as r`;
}

/** A value as the text of its type on the wire (see textFieldsOf). */
function asText(value: OperationNode, type: ColumnType): OperationNode {
  return type === 'decimal' ? RawNode.create(['trim_scale((', ')::numeric)::text'], [value]) : RawNode.create(['(', ')::text'], [value]);
}

/** The name a selection gives its column: its alias, or the column it references. */
function selectedName(selection: OperationNode): { name: string; value: OperationNode } | null {
  if (AliasNode.is(selection) && IdentifierNode.is(selection.alias)) return { name: selection.alias.name, value: selection.node };
  if (ReferenceNode.is(selection) && ColumnNode.is(selection.column)) return { name: selection.column.column.name, value: selection };
  if (ColumnNode.is(selection)) return { name: selection.column.name, value: selection };
  return null;
}

/**
 * The query with each selection cast to its wire text, or null when that could change its rows:
 * unless it selects exactly the columns, in order, and nothing in it can name a selection (an ORDER
 * BY of a bare name would then sort the texts, 10 before 9; a GROUP BY or DISTINCT ON could group
 * them), or it is a union. (An ORDER BY in raw SQL names its columns with their table, as every
 * resource's does.)
 */
function withTextSelections(node: OperationNode, { columns, columnTypes }: Columns): SelectQueryNode | null {
  if (!SelectQueryNode.is(node) || node.groupBy || node.distinctOn || node.setOperations || !node.selections) return null;
  const namesAnySelection = (item: OperationNode) => ColumnNode.is(item) || (ReferenceNode.is(item) && item.table === undefined);
  if (node.orderBy?.items.some((item) => namesAnySelection(item.orderBy))) return null;
  if (node.selections.length !== columns.length) return null;
  const casts: SelectionNode[] = [];
  for (const [index, selection] of node.selections.entries()) {
    const selected = selectedName(selection.selection);
    const column = columns[index]!;
    if (selected === null || selected.name !== column) return null;
    casts.push(SelectionNode.create(AliasNode.create(asText(selected.value, columnTypes[column]!), IdentifierNode.create(column))));
  }
  return SelectQueryNode.cloneWithSelections(SelectQueryNode.cloneWithoutSelections(node), casts);
}
