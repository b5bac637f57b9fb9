import type { FastifyRequest } from 'fastify';
import type { operations } from '../codegen/management';
import type { ListPosition } from '../db/list-position';
import { ApiError } from '../src/http/errors';
import { isUuid } from '../src/uuid';

/* What the management API's handlers share: each operation's request types, and the lists' cursor. */

export type Operation<Id extends keyof operations> = operations[Id];
export type QueryOf<Id extends keyof operations> = NonNullable<Operation<Id>['parameters']['query']>;
export type ParamsOf<Id extends keyof operations> = NonNullable<Operation<Id>['parameters']['path']>;
export type BodyOf<Id extends keyof operations> =
  Operation<Id> extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : unknown;
export type RequestOf<Id extends keyof operations> = FastifyRequest<{ Querystring: QueryOf<Id>; Params: ParamsOf<Id>; Body: BodyOf<Id> }>;

export const defaultLimit = 50;

/** A list's position, opaque to callers: the last row's creation instant (to the microsecond) and id. */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.at, position.id])).toString('base64url');
}

const instant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3,6}Z$/;
/** A row's id in a cursor: a uuid, or the audit log's identity. */
const rowIds = {
  uuid: isUuid,
  identity: (id: string) => /^\d{1,18}$/.test(id),
};

export function decodeCursor(cursor: string | undefined, idKind: keyof typeof rowIds = 'uuid'): ListPosition | null {
  if (cursor === undefined) return null;
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && instant.test(at) && typeof id === 'string' && rowIds[idKind](id)) return { at, id };
  } catch {
    // Not JSON: the same refusal as a JSON of another shape.
  }
  throw new ApiError('invalid_parameter', 'Le paramètre « cursor » n’est pas un curseur valide : reprenez celui de next_cursor.', {
    param: 'cursor',
  });
}

/** A list's `since` and `until` (date-times the document has checked), refused when they leave no time between them. */
export function timeWindow(since: string | undefined, until: string | undefined): { since?: Date; until?: Date } {
  const window = { since: since === undefined ? undefined : new Date(since), until: until === undefined ? undefined : new Date(until) };
  if (window.since && window.until && window.since >= window.until)
    throw new ApiError('invalid_parameter', 'Le paramètre « until » doit être postérieur à « since ».', { param: 'until' });
  return window;
}

/** A page of a list read with one row more than its limit: the rows shown, whether there are more, and the cursor to them. */
export function cursorPage<Row extends { id: string; position: string }, Shown>(
  rows: readonly Row[],
  limit: number,
  view: (row: Row) => Shown,
) {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const hasMore = rows.length > limit;
  return {
    data: page.map(view),
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor({ at: last.position, id: last.id }) : null,
  };
}
