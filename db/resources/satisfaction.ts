import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type SatisfactionRow = components['schemas']['SatisfactionRow'];

/** The surveys a request sees (alias `s`), in their order: answer, then the survey. */
export function surveysInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('satisfaction_surveys as s')
    .where(
      scopeCondition(
        { org: 's.org_id', membership: 's.membership_id', programme: 's.programme_id' },
        naturalTimestampFilter(sql.ref('s.answered_at'), filter),
        filter,
      ),
    )
    .orderBy('s.answered_at')
    .orderBy('s.id');
}

export const satisfactionResource: ListResourceDefinition<'listSatisfaction'> = {
  operationId: 'listSatisfaction',
  name: 'satisfaction',
  ...typedColumns<SatisfactionRow>({
    apprenant: 'text',
    email: 'text',
    programme: 'text',
    programme_slug: 'text',
    note: 'integer',
    nps: 'integer',
    verbatim: 'text',
    repondu_le: 'date',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return surveysInScope(db, filter)
      .innerJoin('memberships as m', byKeyInOrganisation('m', 's.membership_id', filter.orgId))
      .innerJoin('programmes as p', byKeyInOrganisation('p', 's.programme_id', filter.orgId))
      .select([
        'm.name as apprenant',
        'm.email as email',
        'p.title as programme',
        'p.slug as programme_slug',
        's.rating as note',
        's.nps as nps',
        's.verbatim as verbatim',
        parisDate(sql.ref('s.answered_at')).as('repondu_le'),
      ]);
  },
  keys: (db, filter) => surveysInScope(db, filter).select('s.id'),
  pageKey: 's.id',
};
