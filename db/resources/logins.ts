import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDateTime } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type LoginRow = components['schemas']['LoginRow'];

/** The logins a request sees (alias `lg`), in their order: start, then the session. */
export function loginsInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('logins as lg')
    .where(
      scopeCondition(
        { org: 'lg.org_id', membership: 'lg.membership_id' },
        naturalTimestampFilter(sql.ref('lg.started_at'), filter),
        filter,
      ),
    )
    .orderBy('lg.started_at')
    .orderBy('lg.id');
}

// Whole minutes between the displayed start and end, so that `duree_min` = `fin` - `debut`.
const durationMinutes = sql<
  number | null
>`(extract(epoch from date_trunc('minute', lg.ended_at) - date_trunc('minute', lg.started_at)) / 60)::int`;

export const loginsResource: ListResourceDefinition<'listLogins'> = {
  operationId: 'listLogins',
  name: 'logins',
  ...typedColumns<LoginRow>({
    apprenant: 'text',
    email: 'text',
    debut: 'dateTime',
    fin: 'dateTime',
    duree_min: 'integer',
    ip: 'text',
    navigateur: 'text',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: false,
  select(db, filter) {
    return loginsInScope(db, filter)
      .innerJoin('memberships as m', byKeyInOrganisation('m', 'lg.membership_id', filter.orgId))
      .select([
        'm.name as apprenant',
        'm.email as email',
        parisDateTime(sql.ref('lg.started_at')).as('debut'),
        parisDateTime(sql.ref('lg.ended_at')).as('fin'),
        durationMinutes.as('duree_min'),
        sql<string>`host(lg.ip)`.as('ip'),
        'lg.user_agent as navigateur',
      ]);
  },
  keys: (db, filter) => loginsInScope(db, filter).select('lg.id'),
  pageKey: 'lg.id',
};
