import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { ouiNon, parisDateTime, wireDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalDayFilter } from './natural-date';
import { byKeyInOrganisation, scopeCondition, withLessonContext } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type QuizAnswerRow = components['schemas']['QuizAnswerRow'];

/**
 * The answers a request sees (alias `ans`), in order: the attempts' order (day, attempt number,
 * attempt), then the question's position in the quiz, then the answer. Each answer carries what the
 * resource shows of its attempt (learner, programme, lesson, number, day, score, verdict), so this is
 * one index (quiz_answers_*_order_idx) and no join to the attempts.
 */
export function answersInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('quiz_answers as ans')
    .where(
      scopeCondition(
        { org: 'ans.org_id', membership: 'ans.membership_id', programme: 'ans.programme_id' },
        naturalDayFilter(sql.ref('ans.attempt_day'), filter),
        filter,
      ),
    )
    .orderBy('ans.attempt_day')
    .orderBy('ans.attempt_no')
    .orderBy('ans.attempt_id')
    .orderBy('ans.position')
    .orderBy('ans.id');
}

export const quizAnswersResource: ListResourceDefinition<'listQuizAnswers'> = {
  operationId: 'listQuizAnswers',
  name: 'quiz-answers',
  ...typedColumns<QuizAnswerRow>({
    apprenant: 'text',
    email: 'text',
    programme: 'text',
    programme_slug: 'text',
    module: 'text',
    lecon: 'text',
    tentative: 'integer',
    score_tentative: 'integer',
    reussi: 'text',
    question: 'text',
    options: 'text',
    reponse_choisie: 'text',
    bonne_reponse: 'text',
    correct: 'text',
    repondu_le: 'dateTime',
    date: 'date',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    const answers = answersInScope(db, filter).innerJoin('quiz_questions as q', byKeyInOrganisation('q', 'ans.question_id', filter.orgId));
    return withLessonContext(answers, 'ans', filter.orgId).select([
      'ans.attempt_no as tentative',
      'ans.attempt_score as score_tentative',
      ouiNon(sql.ref('ans.attempt_passed')).as('reussi'),
      'q.wording as question',
      sql<string>`array_to_string(q.options, '|')`.as('options'),
      'ans.chosen_option as reponse_choisie',
      'q.correct_option as bonne_reponse',
      ouiNon(sql.ref('ans.is_correct')).as('correct'),
      parisDateTime(sql.ref('ans.answered_at')).as('repondu_le'),
      wireDate(sql.ref('ans.attempt_day')).as('date'),
    ]);
  },
  keys: (db, filter) => answersInScope(db, filter).select('ans.id'),
  pageKey: 'ans.id',
};
