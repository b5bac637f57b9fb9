import { sql } from 'kysely';
import type { DB } from './connection';
import { getSummary } from './summary';

/**
 * What the "Vue d'ensemble" of an organisation shows: its name, its learners and licences counted as
 * `GET /v1/summary` counts them (the same function), its keys and endpoints by state, and its
 * events of the last 30 days by type, samples left out. Every count reads the organisation's range.
 */
export async function organisationOverview(db: DB, orgId: string) {
  const [organisation, summary, keys, endpoints, events] = await Promise.all([
    db.selectFrom('organisations').select(['id', 'name']).where('id', '=', orgId).executeTakeFirstOrThrow(),
    getSummary(db, orgId, null),
    db
      .selectFrom('api_keys')
      .select([
        sql<number>`(count(*) filter (where revoked_at is null and (expires_at is null or expires_at > now())))::int`.as('active'),
        sql<number>`(count(*) filter (where revoked_at is null and expires_at <= now()))::int`.as('expired'),
        sql<number>`(count(*) filter (where revoked_at is not null))::int`.as('revoked'),
      ])
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('webhook_endpoints')
      .select([
        sql<number>`(count(*) filter (where enabled))::int`.as('active'),
        sql<number>`(count(*) filter (where not enabled))::int`.as('disabled'),
      ])
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('events')
      .select(['type', sql<number>`count(*)::int`.as('count')])
      .where('org_id', '=', orgId)
      .where('created_at', '>', sql<Date>`now() - interval '30 days'`)
      .where('sample', '=', false)
      .groupBy('type')
      .orderBy('count', 'desc')
      .orderBy('type')
      .execute(),
  ]);
  return { organisation, summary, keys, endpoints, events };
}
