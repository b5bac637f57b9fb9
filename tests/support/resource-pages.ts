import type { DB } from '../../db/connection';
import type { ResourceDefinition, ResourceFilter } from '../../db/resources/definition';
import { copyResourcePage } from '../../db/resources/list';
import { jsonRows } from '../../src/formats/json-rows';
import { rowsOfCopy } from '../../src/formats/row-batch';

/** One page of a resource as the API writes it (PostgreSQL's COPY bytes into JSON), read back as row objects. */
export async function readResourcePage(
  db: DB,
  definition: ResourceDefinition<any>,
  filter: ResourceFilter,
  limit: number,
  offset: number,
  cap: number | null,
): Promise<Record<string, unknown>[]> {
  const page = await copyResourcePage(db, definition as ResourceDefinition, filter, limit, offset, cap);
  return page === null ? [] : JSON.parse(jsonRows(definition, rowsOfCopy(page, definition.columns.length), '', '').toString('utf8'));
}
