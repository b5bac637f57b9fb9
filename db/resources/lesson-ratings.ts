import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { scopeCondition, withLessonContext } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type LessonRatingRow = components['schemas']['LessonRatingRow'];

/** The lesson ratings a request sees (alias `lr`), in their order: submission, then the rating. */
export function lessonRatingsInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('lesson_ratings as lr')
    .where(
      scopeCondition(
        { org: 'lr.org_id', membership: 'lr.membership_id', programme: 'lr.programme_id' },
        naturalTimestampFilter(sql.ref('lr.submitted_at'), filter),
        filter,
      ),
    )
    .orderBy('lr.submitted_at')
    .orderBy('lr.id');
}

export const lessonRatingsResource: ListResourceDefinition<'listLessonRatings'> = {
  operationId: 'listLessonRatings',
  name: 'lesson-ratings',
  ...typedColumns<LessonRatingRow>({
    apprenant: 'text',
    email: 'text',
    programme: 'text',
    programme_slug: 'text',
    module: 'text',
    lecon: 'text',
    note: 'integer',
    commentaire: 'text',
    soumis_le: 'date',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return withLessonContext(lessonRatingsInScope(db, filter), 'lr', filter.orgId).select([
      'lr.rating as note',
      'lr.comment as commentaire',
      parisDate(sql.ref('lr.submitted_at')).as('soumis_le'),
    ]);
  },
  keys: (db, filter) => lessonRatingsInScope(db, filter).select('lr.id'),
  pageKey: 'lr.id',
};
