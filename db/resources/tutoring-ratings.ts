import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type TutoringRatingRow = components['schemas']['TutoringRatingRow'];

/**
 * The tutoring ratings a request sees (alias `tr`), in their order: submission, then the rating
 * (tutoring_ratings_org_submitted_idx). The programme is the session's: the organisation's sessions
 * of that programme.
 */
export function tutoringRatingsInScope(db: DB, filter: ResourceFilter) {
  let query = db
    .selectFrom('tutoring_ratings as tr')
    .where(
      scopeCondition(
        { org: 'tr.org_id', membership: 'tr.membership_id' },
        naturalTimestampFilter(sql.ref('tr.submitted_at'), filter),
        filter,
      ),
    );
  if (filter.programmeId) {
    const sessions = db
      .selectFrom('tutoring_sessions as pts')
      .select('pts.id')
      .where('pts.org_id', '=', filter.orgId)
      .where('pts.programme_id', '=', filter.programmeId);
    query = query.where('tr.session_id', 'in', sessions);
  }
  return query.orderBy('tr.submitted_at').orderBy('tr.id');
}

export const tutoringRatingsResource: ListResourceDefinition<'listTutoringRatings'> = {
  operationId: 'listTutoringRatings',
  name: 'tutoring-ratings',
  ...typedColumns<TutoringRatingRow>({
    apprenant: 'text',
    email: 'text',
    seance: 'text',
    programme: 'text',
    programme_slug: 'text',
    formateur: 'text',
    note_seance: 'integer',
    note_formateur: 'integer',
    commentaire: 'text',
    soumis_le: 'date',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return tutoringRatingsInScope(db, filter)
      .innerJoin('tutoring_sessions as ts', byKeyInOrganisation('ts', 'tr.session_id', filter.orgId))
      .innerJoin('memberships as m', byKeyInOrganisation('m', 'tr.membership_id', filter.orgId))
      .leftJoin('programmes as p', byKeyInOrganisation('p', 'ts.programme_id', filter.orgId))
      .select([
        'm.name as apprenant',
        'm.email as email',
        'ts.title as seance',
        'p.title as programme',
        'p.slug as programme_slug',
        'ts.trainer_name as formateur',
        'tr.session_rating as note_seance',
        'tr.trainer_rating as note_formateur',
        'tr.comment as commentaire',
        parisDate(sql.ref('tr.submitted_at')).as('soumis_le'),
      ]);
  },
  keys: (db, filter) => tutoringRatingsInScope(db, filter).select('tr.id'),
  pageKey: 'tr.id',
};
