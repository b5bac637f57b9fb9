import { type Expression, type RawBuilder, sql } from 'kysely';
import { parisRfc3339 } from '../../db/render';

/**
 * The body of every delivery of an event, built once, in SQL, in the statement that records the
 * event (its id and `created_at` come from the database): `{"id","type","created_at","data"}`, with
 * `data` exactly as the caller serialised it (its keys in the caller's order). The same bytes go to
 * every endpoint and on every attempt, so that a receiver's signature check always matches.
 */
export function eventBodySql(event: {
  id: Expression<unknown> | RawBuilder<unknown>;
  type: Expression<unknown> | RawBuilder<unknown>;
  createdAt: Expression<unknown> | RawBuilder<unknown>;
  dataJson: string;
}): RawBuilder<string> {
  return sql<string>`('{"id":' || to_json(${event.id}::text)::text || ',"type":' || to_json(${event.type}::text)::text
    || ',"created_at":' || to_json(${parisRfc3339(event.createdAt)})::text || ',"data":' || ${event.dataJson}::text || '}')`;
}
