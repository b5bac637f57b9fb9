import {
  attendanceResource,
  documentsResource,
  enrollmentsResource,
  evaluationsResource,
  learnersResource,
  lessonRatingsResource,
  loginsResource,
  progressResource,
  quizAnswersResource,
  satisfactionResource,
  tutoringRatingsResource,
  usersResource,
} from '../db/resources';
import type { HandlerContext, OperationHandler, OperationId } from './context';
import { createCreateUsers } from './create-users';
import { createGetActivityReport } from './get-activity-report';
import { createGetSummary } from './get-summary';
import { getUnknownResource } from './get-unknown-resource';
import { createListHandler } from './list-resource';

/**
 * Every operation of openapi.yaml, by operationId, each typed by its own operation of the generated
 * contract, and GET /{resource} of its `x-unlisted-paths`. The `satisfies` makes a missing or
 * misspelled operation, or a handler that does not follow its operation, a compile error instead of
 * a 500 at request time.
 */
export function createHandlers(context: HandlerContext) {
  return {
    listLearners: createListHandler('listLearners', learnersResource, context),
    listUsers: createListHandler('listUsers', usersResource, context),
    createUsers: createCreateUsers(context),
    getSummary: createGetSummary(context),
    listAttendance: createListHandler('listAttendance', attendanceResource, context),
    listEvaluations: createListHandler('listEvaluations', evaluationsResource, context),
    listQuizAnswers: createListHandler('listQuizAnswers', quizAnswersResource, context),
    listDocuments: createListHandler('listDocuments', documentsResource, context),
    listSatisfaction: createListHandler('listSatisfaction', satisfactionResource, context),
    listEnrollments: createListHandler('listEnrollments', enrollmentsResource, context),
    listProgress: createListHandler('listProgress', progressResource, context),
    listLogins: createListHandler('listLogins', loginsResource, context),
    listTutoringRatings: createListHandler('listTutoringRatings', tutoringRatingsResource, context),
    listLessonRatings: createListHandler('listLessonRatings', lessonRatingsResource, context),
    getActivityReport: createGetActivityReport(context),
    getUnknownResource,
  } satisfies { [Id in OperationId]: OperationHandler<Id> } & { getUnknownResource: typeof getUnknownResource };
}
