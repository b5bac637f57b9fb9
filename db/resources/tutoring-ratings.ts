import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { scopeCondition, windowByKeys } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type TutoringRatingRow = components['schemas']['TutoringRatingRow'];

/**
 * The tutoring ratings a request sees (alias `tr`, with its session `ts`), in their order:
 * submission, then the rating. The programme is the session's.
 */
export function tutoringRatingsInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('tutoring_ratings as tr')
    .innerJoin('tutoring_sessions as ts', 'ts.id', 'tr.session_id')
    .where('ts.org_id', '=', filter.orgId)
    .where(
      scopeCondition(
        { org: 'tr.org_id', membership: 'tr.membership_id', programme: 'ts.programme_id' },
        naturalTimestampFilter(sql.ref('tr.submitted_at'), filter),
        filter,
      ),
    )
    .orderBy('tr.submitted_at')
    .orderBy('tr.id');
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
      .innerJoin('memberships as m', 'm.id', 'tr.membership_id')
      .innerJoin('accounts as a', 'a.id', 'm.account_id')
      .leftJoin('programmes as p', 'p.id', 'ts.programme_id')
      .select([
        'a.name as apprenant',
        'a.email as email',
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
  selectWindow(db, filter, window) {
    return windowByKeys(this.select(db, filter), sql.ref('tr.id'), this.keys!(db, filter), window);
  },
};
