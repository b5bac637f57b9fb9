import { sql } from 'kysely';
import { activateOnFirstLogin } from './activation';
import type { DB } from './connection';
import { formatParisRfc3339 } from './paris-time';
import { type EventLearner, recordEvent } from './webhooks';

/**
 * The live write paths of learner activity, each with the event it causes recorded in the same
 * transaction: a lesson opened (`course.started` the first time in a course), a quiz completed
 * (`quiz.completed` with its answers), a certificate issued (`programme.completed`), a satisfaction
 * survey (`satisfaction.submitted`), a login (the first one records `learner.activated`). Given a
 * plain connection, each opens its own transaction; given a transaction, it joins it
 * (docs/decisions.md#events).
 */

/** The learner is not enrolled in that programme, or the lesson is not one of the organisation's. */
export class ActivityRefused extends Error {
  override name = 'ActivityRefused';
}

function inTransaction<T>(db: DB, work: (trx: DB) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

async function learnerOf(trx: DB, orgId: string, membershipId: string): Promise<EventLearner> {
  const learner = await trx
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select(['a.id as user_id', 'a.email', 'a.name'])
    .where('m.id', '=', membershipId)
    .where('m.org_id', '=', orgId)
    .executeTakeFirst();
  if (!learner) throw new ActivityRefused(`membership ${membershipId} is not a learner of organisation ${orgId}`);
  return learner;
}

/**
 * Locks the learner's enrolment in the programme: the activity of one learner in one programme is
 * written one transaction at a time, so "the first lesson of a course" and attempt numbers hold
 * under concurrent requests. Returns the programme as events show it.
 */
async function lockEnrolment(trx: DB, orgId: string, membershipId: string, programmeId: string) {
  const enrolment = await trx
    .selectFrom('programme_enrolments as pe')
    .innerJoin('programmes as p', 'p.id', 'pe.programme_id')
    .select(['pe.id', 'p.slug', 'p.title'])
    .where('pe.membership_id', '=', membershipId)
    .where('pe.programme_id', '=', programmeId)
    .where('pe.org_id', '=', orgId)
    .forUpdate('pe')
    .executeTakeFirst();
  if (!enrolment) throw new ActivityRefused(`membership ${membershipId} is not enrolled in programme ${programmeId}`);
  return { slug: enrolment.slug, title: enrolment.title };
}

async function lessonOf(trx: DB, orgId: string, lessonId: string) {
  const lesson = await trx
    .selectFrom('lessons as l')
    .innerJoin('modules as m', 'm.id', 'l.module_id')
    .select(['l.id', 'l.programme_id', 'l.key', 'l.title', 'l.has_quiz', 'l.pass_score', 'm.title as module_title', 'm.course_id'])
    .where('l.id', '=', lessonId)
    .where('l.org_id', '=', orgId)
    .executeTakeFirst();
  if (!lesson) throw new ActivityRefused(`lesson ${lessonId} is not one of organisation ${orgId}`);
  return lesson;
}

/**
 * The learner's course time is written one transaction at a time (their membership row is locked),
 * and a visit may not overlap another: a learner reads one lesson at a time, which is what makes
 * `temps_cours_min` (the sum of lesson minutes) fit within `temps_actif_min` (their union).
 */
async function refuseOverlappingCourseTime(trx: DB, visit: { orgId: string; membershipId: string; openedAt: Date }, leftAt: Date) {
  await trx
    .selectFrom('memberships')
    .select('id')
    .where('id', '=', visit.membershipId)
    .where('org_id', '=', visit.orgId)
    .forNoKeyUpdate()
    .execute();
  const overlapping = await trx
    .selectFrom('activity_intervals')
    .select(['started_at', 'ended_at'])
    .where('membership_id', '=', visit.membershipId)
    .where('kind', '=', 'cours')
    .where('started_at', '<', leftAt)
    .where('ended_at', '>', visit.openedAt)
    .limit(1)
    .executeTakeFirst();
  if (overlapping) {
    throw new ActivityRefused(
      `the learner is already on a lesson from ${overlapping.started_at.toISOString()} to ${overlapping.ended_at.toISOString()}`,
    );
  }
}

/**
 * A learner opens a lesson (and spends `activeSeconds` on it from `openedAt`): the course interval
 * that opens the visit (its minutes go to the year they fall in, cut at midnight on 31 December),
 * the lesson's lifetime progress (viewed from this visit on, one more visit, time), and
 * `course.started` when it is the first lesson the learner opens in that course.
 */
export async function openLesson(
  db: DB,
  visit: {
    orgId: string;
    membershipId: string;
    lessonId: string;
    openedAt: Date;
    activeSeconds: number;
  },
): Promise<{ courseStarted: boolean; eventId: string | null }> {
  return inTransaction(db, async (trx) => {
    const lesson = await lessonOf(trx, visit.orgId, visit.lessonId);
    const programme = await lockEnrolment(trx, visit.orgId, visit.membershipId, lesson.programme_id);
    const leftAt = new Date(visit.openedAt.getTime() + visit.activeSeconds * 1000);
    await refuseOverlappingCourseTime(trx, visit, leftAt);
    const courseStarted = !(await hasOpenedCourse(trx, visit.membershipId, lesson.course_id));
    await recordLessonVisit(trx, visit, lesson);
    await recordCourseInterval(trx, visit, lesson, leftAt);
    if (!courseStarted) return { courseStarted: false, eventId: null };
    const event = await recordEvent(trx, {
      orgId: visit.orgId,
      type: 'course.started',
      data: {
        learner: await learnerOf(trx, visit.orgId, visit.membershipId),
        course_id: lesson.course_id,
        programme,
        first_started_at: formatParisRfc3339(visit.openedAt),
      },
    });
    return { courseStarted: true, eventId: event.id };
  });
}

/** Whether the learner has opened any lesson of the course before. */
async function hasOpenedCourse(trx: DB, membershipId: string, courseId: string): Promise<boolean> {
  const seen = await trx
    .selectFrom('lesson_progress as lp')
    .innerJoin('lessons as l', 'l.id', 'lp.lesson_id')
    .innerJoin('modules as m', 'm.id', 'l.module_id')
    .select(sql<boolean>`true`.as('seen'))
    .where('lp.membership_id', '=', membershipId)
    .where('m.course_id', '=', courseId)
    .limit(1)
    .executeTakeFirst();
  return seen !== undefined;
}

/** The lesson's lifetime progress: viewed (from its first visit), one more visit, the time added. */
async function recordLessonVisit(
  trx: DB,
  visit: { orgId: string; membershipId: string; openedAt: Date; activeSeconds: number },
  lesson: { id: string; programme_id: string },
): Promise<void> {
  await trx
    .insertInto('lesson_progress')
    .values({
      org_id: visit.orgId,
      membership_id: visit.membershipId,
      programme_id: lesson.programme_id,
      lesson_id: lesson.id,
      viewed: true,
      viewed_at: visit.openedAt,
      visits: 1,
      active_seconds: visit.activeSeconds,
      first_visit_at: visit.openedAt,
      last_visit_at: visit.openedAt,
    })
    .onConflict((c) =>
      c.columns(['membership_id', 'lesson_id']).doUpdateSet({
        viewed: true,
        viewed_at: sql`least(lesson_progress.viewed_at, excluded.viewed_at)`,
        visits: sql`lesson_progress.visits + 1`,
        active_seconds: sql`lesson_progress.active_seconds + excluded.active_seconds`,
        first_visit_at: sql`least(lesson_progress.first_visit_at, excluded.first_visit_at)`,
        last_visit_at: sql`greatest(lesson_progress.last_visit_at, excluded.last_visit_at)`,
      }),
    )
    .execute();
}

/** The course interval of the visit, which opens it. A visit without active time still opens one (an empty interval): it counts as a visit. */
async function recordCourseInterval(
  trx: DB,
  visit: { orgId: string; membershipId: string; openedAt: Date },
  lesson: { id: string; programme_id: string },
  leftAt: Date,
): Promise<void> {
  await trx
    .insertInto('activity_intervals')
    .values({
      org_id: visit.orgId,
      membership_id: visit.membershipId,
      kind: 'cours',
      started_at: visit.openedAt,
      ended_at: leftAt,
      programme_id: lesson.programme_id,
      lesson_id: lesson.id,
      attendance_id: null,
      opens_visit: true,
    })
    .execute();
}

type QuizAttemptInput = {
  orgId: string;
  membershipId: string;
  lessonId: string;
  completedAt: Date;
  answers: { questionId: string; chosenOption: string; answeredAt: Date }[];
};

/**
 * A learner completes the quiz of a lesson: a numbered attempt, its answers, its score (share of
 * correct answers, /100) and verdict (the lesson's pass score), and `quiz.completed` with every answer.
 */
export async function completeQuiz(db: DB, attempt: QuizAttemptInput) {
  return inTransaction(db, async (trx) => {
    const lesson = await lessonOf(trx, attempt.orgId, attempt.lessonId);
    if (!lesson.has_quiz) throw new ActivityRefused(`lesson ${lesson.key} has no quiz`);
    const programme = await lockEnrolment(trx, attempt.orgId, attempt.membershipId, lesson.programme_id);
    const questions = await quizQuestions(trx, lesson.id);
    const answered = checkedAnswers(questions, attempt.answers);
    const attemptNo = (await lastAttemptNo(trx, attempt.membershipId, lesson.id)) + 1;
    const score = Math.round((100 * answered.filter((a) => a.isCorrect).length) / questions.length);
    const passed = score >= lesson.pass_score;
    const attemptId = await recordAttempt(trx, attempt, lesson, { attemptNo, score, passed }, answered);
    const event = await recordEvent(trx, {
      orgId: attempt.orgId,
      type: 'quiz.completed',
      data: {
        learner: await learnerOf(trx, attempt.orgId, attempt.membershipId),
        programme,
        lesson: { key: lesson.key, title: lesson.title, module_title: lesson.module_title, course_id: lesson.course_id },
        attempt_number: attemptNo,
        score,
        passed,
        completed_at: formatParisRfc3339(attempt.completedAt),
        answers: answered.map(({ question, answer, isCorrect }) => ({
          question: question.wording,
          options: question.options,
          chosen_label: answer.chosenOption,
          correct_label: question.correct_option,
          is_correct: isCorrect,
          attempt_no: attemptNo,
          answered_at: formatParisRfc3339(answer.answeredAt),
        })),
      },
    });
    return { attemptId, attemptNo, score, passed, eventId: event.id };
  });
}

function quizQuestions(trx: DB, lessonId: string) {
  return trx
    .selectFrom('quiz_questions')
    .select(['id', 'position', 'wording', 'options', 'correct_option'])
    .where('lesson_id', '=', lessonId)
    .orderBy('position')
    .execute();
}
type QuizQuestion = Awaited<ReturnType<typeof quizQuestions>>[number];
type QuizAnswer = QuizAttemptInput['answers'][number];

/** The answers in question order, each marked right or wrong; refused unless every one names a question of the quiz and one of its options. */
function checkedAnswers(questions: QuizQuestion[], answers: QuizAnswer[]) {
  const chosen = new Map(answers.map((answer) => [answer.questionId, answer]));
  const answered = questions
    .filter((question) => chosen.has(question.id))
    .map((question) => {
      const answer = chosen.get(question.id)!;
      if (!question.options.includes(answer.chosenOption))
        throw new ActivityRefused(`"${answer.chosenOption}" is not an option of question ${question.id}`);
      return { question, answer, isCorrect: answer.chosenOption === question.correct_option };
    });
  if (answered.length !== answers.length || answered.length === 0) throw new ActivityRefused('answers must name questions of this quiz');
  return answered;
}

/** The number of the learner's latest attempt at the lesson's quiz (0 before the first); the enrolment lock keeps it stable. */
async function lastAttemptNo(trx: DB, membershipId: string, lessonId: string): Promise<number> {
  const { previous } = await trx
    .selectFrom('quiz_attempts')
    .select(sql<number>`coalesce(max(attempt_no), 0)::int`.as('previous'))
    .where('membership_id', '=', membershipId)
    .where('lesson_id', '=', lessonId)
    .executeTakeFirstOrThrow();
  return previous;
}

/** The attempt and its answers; returns the attempt's id. */
async function recordAttempt(
  trx: DB,
  attempt: QuizAttemptInput,
  lesson: { id: string; programme_id: string },
  result: { attemptNo: number; score: number; passed: boolean },
  answered: ReturnType<typeof checkedAnswers>,
): Promise<string> {
  const { id: attemptId } = await trx
    .insertInto('quiz_attempts')
    .values({
      org_id: attempt.orgId,
      membership_id: attempt.membershipId,
      programme_id: lesson.programme_id,
      lesson_id: lesson.id,
      attempt_no: result.attemptNo,
      score: result.score,
      passed: result.passed,
      completed_at: attempt.completedAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await trx
    .insertInto('quiz_answers')
    .values(
      answered.map(({ question, answer, isCorrect }) => ({
        org_id: attempt.orgId,
        attempt_id: attemptId,
        question_id: question.id,
        position: question.position,
        chosen_option: answer.chosenOption,
        is_correct: isCorrect,
        answered_at: answer.answeredAt,
      })),
    )
    .execute();
  return attemptId;
}

/**
 * The end certificate of a programme: measured hours (the learner's active time on its lessons, one
 * decimal) and completion score (the mean of the learner's best score at each quiz of the programme,
 * /100; 100 for a programme without quizzes: the generator's definition too), and `programme.completed`.
 * At most one per enrolment: a second call issues nothing and records no event.
 */
export async function issueCertificate(db: DB, certificate: { orgId: string; membershipId: string; programmeId: string; issuedAt: Date }) {
  return inTransaction(db, async (trx) => {
    const programme = await lockEnrolment(trx, certificate.orgId, certificate.membershipId, certificate.programmeId);
    const measured = await trx
      .selectFrom('lessons as l')
      .leftJoin('lesson_progress as lp', (join) =>
        join.onRef('lp.lesson_id', '=', 'l.id').on('lp.membership_id', '=', certificate.membershipId),
      )
      .select([
        sql<number>`round(coalesce(sum(lp.active_seconds), 0) / 3600.0, 1)`.as('hours'),
        (eb) =>
          eb
            .selectFrom(
              eb
                .selectFrom('quiz_attempts as qa')
                .select(sql<number>`max(qa.score)`.as('best'))
                .where('qa.membership_id', '=', certificate.membershipId)
                .where('qa.programme_id', '=', certificate.programmeId)
                .groupBy('qa.lesson_id')
                .as('best_scores'),
            )
            .select(sql<number>`coalesce(round(avg(best_scores.best))::int, 100)`.as('score'))
            .as('completionScore'),
      ])
      .where('l.programme_id', '=', certificate.programmeId)
      .executeTakeFirstOrThrow();
    const issued = await trx
      .insertInto('documents')
      .values({
        org_id: certificate.orgId,
        membership_id: certificate.membershipId,
        programme_id: certificate.programmeId,
        type: 'Attestation',
        issued_at: certificate.issuedAt,
        hours: measured.hours,
        completion_score: measured.completionScore,
      })
      // A literal predicate, so that PostgreSQL infers the partial unique index (one certificate each).
      .onConflict((c) => c.columns(['membership_id', 'programme_id']).where(sql<boolean>`type = 'Attestation'`).doNothing())
      .returning(['id', 'hours', 'completion_score'])
      .executeTakeFirst();
    if (!issued) return { issued: false as const, eventId: null };
    const event = await recordEvent(trx, {
      orgId: certificate.orgId,
      type: 'programme.completed',
      data: {
        learner: await learnerOf(trx, certificate.orgId, certificate.membershipId),
        programme,
        // A certificate always has a completion score (a check of the table).
        total_hours: issued.hours,
        completion_score: issued.completion_score!,
        attestation_issued_at: formatParisRfc3339(certificate.issuedAt),
      },
    });
    return { issued: true as const, documentId: issued.id, eventId: event.id };
  });
}

/** A satisfaction survey received for a programme, and `satisfaction.submitted`. */
export async function submitSatisfaction(
  db: DB,
  survey: {
    orgId: string;
    membershipId: string;
    programmeId: string;
    rating: number;
    nps: number;
    verbatim: string | null;
    answeredAt: Date;
  },
) {
  return inTransaction(db, async (trx) => {
    const programme = await lockEnrolment(trx, survey.orgId, survey.membershipId, survey.programmeId);
    const { id } = await trx
      .insertInto('satisfaction_surveys')
      .values({
        org_id: survey.orgId,
        membership_id: survey.membershipId,
        programme_id: survey.programmeId,
        rating: survey.rating,
        nps: survey.nps,
        verbatim: survey.verbatim,
        answered_at: survey.answeredAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const event = await recordEvent(trx, {
      orgId: survey.orgId,
      type: 'satisfaction.submitted',
      data: {
        learner: await learnerOf(trx, survey.orgId, survey.membershipId),
        programme,
        rating: survey.rating,
        nps: survey.nps,
        verbatim: survey.verbatim,
        answered_at: formatParisRfc3339(survey.answeredAt),
      },
    });
    return { surveyId: id, eventId: event.id };
  });
}

/** A login to the app (a session from `startedAt` to `endedAt`); the first one activates the learner. */
export async function recordLogin(
  db: DB,
  login: {
    orgId: string;
    membershipId: string;
    startedAt: Date;
    endedAt: Date | null;
    ip: string;
    userAgent: string | null;
  },
) {
  return inTransaction(db, async (trx) => {
    await learnerOf(trx, login.orgId, login.membershipId);
    await trx
      .insertInto('logins')
      .values({
        org_id: login.orgId,
        membership_id: login.membershipId,
        started_at: login.startedAt,
        ended_at: login.endedAt,
        ip: login.ip,
        user_agent: login.userAgent,
      })
      .execute();
    return activateOnFirstLogin(trx, { orgId: login.orgId, membershipId: login.membershipId, at: login.startedAt });
  });
}
