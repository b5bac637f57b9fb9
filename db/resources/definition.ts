import type { SelectQueryBuilder } from 'kysely';
import type { operations } from '../../codegen/openapi';
import type { DB } from '../connection';

/** What one list request asks of a resource, resolved and scoped to the caller's organisation. */
export interface ResourceFilter {
  orgId: string;
  /** Paris calendar year of the natural date (ignored by resources without one). */
  year: number;
  /** `YYYY-MM-DD`: keep rows whose natural date is on or after it; null when absent or ignored. */
  updatedSince: string | null;
  /** One learner (membership) of the organisation, or null for the whole organisation. */
  membershipId: string | null;
  /** One programme of the organisation, or null. */
  programmeId: string | null;
}

/**
 * What a column holds on the wire, so that a workbook gives each cell its type and an export's
 * fields are written right (rendering.ts, src/formats/csv.ts): `text` (`Oui` / `Non` included), `integer`,
 * `decimal` (`documents.heures`, a numeric), `date` (a Paris `YYYY-MM-DD`) or `dateTime` (a Paris
 * `YYYY-MM-DD HH:MM`). Null is an empty cell whatever the type. A CSV writes numbers as they are;
 * everything else meets its quoting and formula guard.
 */
export type ColumnType = 'text' | 'integer' | 'decimal' | 'date' | 'dateTime';

/** Every column of a row with its type, in the contract's order (the row's JSON keys). */
export type ColumnTypes<Row> = { readonly [Column in keyof Row & string]-?: ColumnType };

/**
 * A list resource: its wire name, its columns in the contract's order with their types, and the
 * query of its rows. The shared machinery (db/resources/list.ts, rendering.ts,
 * handlers/list-resource.ts) does the rest: paging, the cap, meta, the CSV and the workbook.
 */
export interface ResourceDefinition<Row extends Record<string, unknown> = Record<string, unknown>, Name extends string = string> {
  /** The wire name (`resource` of the envelope). */
  readonly name: Name;
  /** The columns in the contract's order: the header of the CSV and of the workbook. */
  readonly columns: readonly (keyof Row & string)[];
  /** The type of each column (`typedColumns` gives both from one list). */
  readonly columnTypes: ColumnTypes<Row>;
  /** Whether `year` applies (false for `users`). */
  readonly filtersByYear: boolean;
  /** Whether `updated_since` applies (false for `learners`). */
  readonly filtersByUpdatedSince: boolean;
  /** Whether `programme` applies (false for `learners`, `logins`, `users`). */
  readonly filtersByProgramme: boolean;
  /**
   * The rows of the filter, wire-ready (French keys, rendered dates and Oui/Non), ordered by the
   * natural date then a unique key, so that offset pagination is deterministic. The count replaces
   * the select list and drops the order, so the FROM/WHERE/GROUP BY alone must define the rows (no
   * DISTINCT in the select list); per-row lookups belong in the select list as scalar subqueries.
   */
  select(db: DB, filter: ResourceFilter): SelectQueryBuilder<any, any, Row>;
  /**
   * Optional, for resources whose rows cost more to build than to find: the filter's rows as their
   * unique keys only (one column), in the same order and with the fewest joins. Counting reads these.
   */
  keys?(db: DB, filter: ResourceFilter): SelectQueryBuilder<any, any, any>;
  /** Optional, instead of `keys`: the number of the filter's rows, computed without listing them. */
  count?(db: DB, filter: ResourceFilter): Promise<number>;
  /**
   * Optional, with `keys`: the column of `select` that holds the key `keys` selects (`lg.id`). A
   * page then reads its keys first, with its limit and offset, and builds only its own rows,
   * selected by those keys (db/resources/list.ts): a deep offset skips cheap keys, not rendered
   * rows, and PostgreSQL plans the rows knowing how many there are.
   */
  readonly pageKey?: string;
  /**
   * Optional, instead of `pageKey`: the rows of one window of the order, built for that window
   * only. Same rows, same order as `select` with limit and offset.
   */
  selectWindow?(db: DB, filter: ResourceFilter, window: RowWindow): SelectQueryBuilder<any, any, Row>;
}

/** The unique key of a row, as `keys` selects it: a uuid, or a bigint read as a number. */
export type PageKey = string | number;

/** A page of a resource's order. */
export interface RowWindow {
  limit: number;
  offset: number;
}

/**
 * `columns` and `columnTypes` from one list of the row's columns with their types, written in the
 * contract's order: a column missing from the list, or one the row does not have, fails the build.
 */
export function typedColumns<Row extends Record<string, unknown>>(
  types: ColumnTypes<Row>,
): Pick<ResourceDefinition<Row>, 'columns' | 'columnTypes'> {
  return { columns: Object.keys(types) as (keyof Row & string)[], columnTypes: types };
}

/** The JSON body of an operation's 200 answer, as the generated contract types it (of each, for a union). */
type JsonPageOf<Id extends keyof operations> = Id extends unknown
  ? operations[Id]['responses'] extends { 200: { content: { 'application/json': infer Json } } }
    ? Json
    : never
  : never;

/** The list operations of the contract: those whose JSON answer is a page of rows. */
export type ListOperationId = {
  [Id in keyof operations]: [JsonPageOf<Id>] extends [never]
    ? never
    : JsonPageOf<Id> extends { pagination: unknown; data: unknown[] }
      ? Id
      : never;
}[keyof operations];
/** The row of a list operation, and its resource's wire name, as the contract defines them. */
export type RowOf<Id extends ListOperationId> = JsonPageOf<Id> extends { data: (infer Row)[] } ? Row : never;
export type ResourceNameOf<Id extends ListOperationId> = JsonPageOf<Id> extends { resource: infer Name } ? Name : never;

/**
 * The definition of one list operation of openapi.yaml, in `db/resources/<name>.ts` where `<name>` is
 * the operation's path: its rows and wire name are the ones the generated contract gives the
 * operation, so a definition that does not follow its operation fails the build. Adding a resource
 * is one file of this shape and its operation in openapi.yaml (db/resource-registry.ts finds the file).
 */
export type ListResourceDefinition<Id extends ListOperationId> = ResourceDefinition<
  RowOf<Id> & Record<string, unknown>,
  ResourceNameOf<Id> & string
> & {
  /** The operation of openapi.yaml this resource answers. */
  readonly operationId: Id;
};

/** Any list resource, as db/resource-registry.ts loads it: its own file has checked it against its operation. */
export type ListResource = ResourceDefinition<Record<string, unknown>, ResourceNameOf<ListOperationId> & string> & {
  readonly operationId: ListOperationId;
};
