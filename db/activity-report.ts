import type { components } from '../codegen/openapi';
import type { DB } from './connection';
import type { LearnerIdentity } from './learners';
import { attendanceResource } from './resources/attendance';
import type { ResourceDefinition, ResourceFilter } from './resources/definition';
import { documentsResource } from './resources/documents';
import { enrollmentsResource } from './resources/enrollments';
import { evaluationsResource } from './resources/evaluations';
import { learnersResource } from './resources/learners';
import { lessonRatingsResource } from './resources/lesson-ratings';
import { loginsResource } from './resources/logins';
import { progressResource } from './resources/progress';
import { quizAnswersResource } from './resources/quiz-answers';
import { satisfactionResource } from './resources/satisfaction';
import { tutoringRatingsResource } from './resources/tutoring-ratings';

type Schemas = components['schemas'];

/**
 * Everything the activity report shows, as the API's resources give it for one learner, one year
 * and optionally one programme: the rows are the JSON resources' rows, so the PDF and the JSON
 * cannot disagree.
 */
export interface ActivityReportData {
  organisationName: string;
  learner: { userId: string; email: string; name: string | null };
  year: number;
  programme: { slug: string; title: string } | null;
  /** `YYYY-MM-DD HH:MM`, Paris time, as `meta.generated_at`. */
  generatedAt: string;
  /** The learner's `learners` row for the year (that resource ignores `programme`). */
  summary: Schemas['LearnerRow'] | null;
  enrollments: Schemas['EnrollmentRow'][];
  logins: Schemas['LoginRow'][];
  progress: Schemas['ProgressRow'][];
  evaluations: Schemas['EvaluationRow'][];
  quizAnswers: Schemas['QuizAnswerRow'][];
  attendance: Schemas['AttendanceRow'][];
  documents: Schemas['DocumentRow'][];
  satisfaction: Schemas['SatisfactionRow'][];
  tutoringRatings: Schemas['TutoringRatingRow'][];
  lessonRatings: Schemas['LessonRatingRow'][];
}

export interface ActivityReportScope {
  orgId: string;
  orgName: string;
  learner: LearnerIdentity;
  year: number;
  /** The `programme` filter, resolved (an unknown slug is the caller's 400). */
  programmeId: string | null;
  /** `YYYY-MM-DD HH:MM`, Paris time. */
  generatedAt: string;
}

/**
 * The rows of one resource exactly as `GET /<resource>?user_id=…&year=…&programme=…` lists them:
 * the same definition, and the same rule that a resource without a programme ignores `programme`.
 */
function rowsOf<Row extends Record<string, unknown>>(db: DB, definition: ResourceDefinition<Row>, filter: ResourceFilter): Promise<Row[]> {
  return definition.select(db, definition.filtersByProgramme ? filter : { ...filter, programmeId: null }).execute() as Promise<Row[]>;
}

/**
 * Everything the activity report shows, read from the list resources' own definitions (one source
 * of figures, so the PDF and the JSON cannot disagree), in one read-only snapshot, so that the
 * summary and the detail tables describe the same moment (docs/decisions.md#activity-report).
 */
export async function gatherActivityReport(db: DB, scope: ActivityReportScope): Promise<ActivityReportData> {
  const filter: ResourceFilter = {
    orgId: scope.orgId,
    year: scope.year,
    updatedSince: null,
    membershipId: scope.learner.membershipId,
    programmeId: scope.programmeId,
  };
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      const programme =
        scope.programmeId === null
          ? null
          : await trx
              .selectFrom('programmes')
              .select(['slug', 'title'])
              .where('id', '=', scope.programmeId)
              .where('org_id', '=', scope.orgId)
              .executeTakeFirstOrThrow();
      // One connection, one query at a time: a transaction's queries cannot run in parallel.
      const [summary] = await rowsOf(trx, learnersResource, filter);
      const enrollments = await rowsOf(trx, enrollmentsResource, filter);
      const logins = await rowsOf(trx, loginsResource, filter);
      const progress = await rowsOf(trx, progressResource, filter);
      const evaluations = await rowsOf(trx, evaluationsResource, filter);
      const quizAnswers = await rowsOf(trx, quizAnswersResource, filter);
      const attendance = await rowsOf(trx, attendanceResource, filter);
      const documents = await rowsOf(trx, documentsResource, filter);
      const satisfaction = await rowsOf(trx, satisfactionResource, filter);
      const tutoringRatings = await rowsOf(trx, tutoringRatingsResource, filter);
      const lessonRatings = await rowsOf(trx, lessonRatingsResource, filter);
      return {
        organisationName: scope.orgName,
        learner: { userId: scope.learner.userId, email: scope.learner.email, name: summary?.nom ?? null },
        year: scope.year,
        programme,
        generatedAt: scope.generatedAt,
        summary: summary ?? null,
        enrollments,
        logins,
        progress,
        evaluations,
        quizAnswers,
        attendance,
        documents,
        satisfaction,
        tutoringRatings,
        lessonRatings,
      };
    });
}
