import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type DocumentRow = components['schemas']['DocumentRow'];

/** The documents a request sees (alias `d`), in their order: issue, then the document. */
export function documentsInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('documents as d')
    .where(
      scopeCondition(
        { org: 'd.org_id', membership: 'd.membership_id', programme: 'd.programme_id' },
        naturalTimestampFilter(sql.ref('d.issued_at'), filter),
        filter,
      ),
    )
    .orderBy('d.issued_at')
    .orderBy('d.id');
}

export const documentsResource: ListResourceDefinition<'listDocuments'> = {
  operationId: 'listDocuments',
  name: 'documents',
  ...typedColumns<DocumentRow>({
    apprenant: 'text',
    email: 'text',
    type: 'text',
    programme: 'text',
    programme_slug: 'text',
    emis_le: 'date',
    heures: 'decimal',
    score_completion: 'integer',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return documentsInScope(db, filter)
      .innerJoin('memberships as m', byKeyInOrganisation('m', 'd.membership_id', filter.orgId))
      .innerJoin('programmes as p', byKeyInOrganisation('p', 'd.programme_id', filter.orgId))
      .select([
        'm.name as apprenant',
        'm.email as email',
        'd.type as type',
        'p.title as programme',
        'p.slug as programme_slug',
        parisDate(sql.ref('d.issued_at')).as('emis_le'),
        'd.hours as heures',
        'd.completion_score as score_completion',
      ]);
  },
  keys: (db, filter) => documentsInScope(db, filter).select('d.id'),
  pageKey: 'd.id',
};
