import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { ouiNon, wireDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalDayFilter } from './natural-date';
import { scopeCondition, withLessonContext } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type EvaluationRow = components['schemas']['EvaluationRow'];

/**
 * The quiz attempts a request sees (alias `qa`), in the order of `evaluations` and `quiz-answers`:
 * Paris day of the attempt, attempt number, then the attempt (quiz_attempts_*_order_idx, index-only).
 */
export function attemptsInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('quiz_attempts as qa')
    .where(
      scopeCondition(
        { org: 'qa.org_id', membership: 'qa.membership_id', programme: 'qa.programme_id' },
        naturalDayFilter(sql.ref('qa.completed_day'), filter),
        filter,
      ),
    )
    .orderBy('qa.completed_day')
    .orderBy('qa.attempt_no')
    .orderBy('qa.id');
}

export const evaluationsResource: ListResourceDefinition<'listEvaluations'> = {
  operationId: 'listEvaluations',
  name: 'evaluations',
  ...typedColumns<EvaluationRow>({
    apprenant: 'text',
    email: 'text',
    programme: 'text',
    programme_slug: 'text',
    module: 'text',
    lecon: 'text',
    tentative: 'integer',
    score: 'integer',
    reussi: 'text',
    date: 'date',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return withLessonContext(attemptsInScope(db, filter), 'qa', filter.orgId).select([
      'qa.attempt_no as tentative',
      'qa.score as score',
      ouiNon(sql.ref('qa.passed')).as('reussi'),
      wireDate(sql.ref('qa.completed_day')).as('date'),
    ]);
  },
  keys: (db, filter) => attemptsInScope(db, filter).select('qa.id'),
  pageKey: 'qa.id',
};
