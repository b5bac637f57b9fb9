import type { operations } from '../codegen/openapi';
import {
  attendanceResource, documentsResource, enrollmentsResource, evaluationsResource, learnersResource, lessonRatingsResource, loginsResource,
  progressResource, quizAnswersResource, satisfactionResource, tutoringRatingsResource, usersResource,
} from '../db/resources';
import type { Handler, HandlerContext } from './context';
import { createCreateUsers } from './create-users';
import { createGetActivityReport } from './get-activity-report';
import { createGetSummary } from './get-summary';
import { getUnknownResource } from './get-unknown-resource';
import { createListHandler } from './list-resource';

export type OperationId = keyof operations;

/**
 * Every operation of openapi.yaml, by operationId. The `satisfies` makes a missing or misspelled
 * operation a compile error instead of a 500 at request time.
 */
export function createHandlers(context: HandlerContext) {
  return {
    listLearners: createListHandler(learnersResource, context),
    listUsers: createListHandler(usersResource, context),
    createUsers: createCreateUsers(context),
    getSummary: createGetSummary(context),
    listAttendance: createListHandler(attendanceResource, context),
    listEvaluations: createListHandler(evaluationsResource, context),
    listQuizAnswers: createListHandler(quizAnswersResource, context),
    listDocuments: createListHandler(documentsResource, context),
    listSatisfaction: createListHandler(satisfactionResource, context),
    listEnrollments: createListHandler(enrollmentsResource, context),
    listProgress: createListHandler(progressResource, context),
    listLogins: createListHandler(loginsResource, context),
    listTutoringRatings: createListHandler(tutoringRatingsResource, context),
    listLessonRatings: createListHandler(lessonRatingsResource, context),
    getActivityReport: createGetActivityReport(context),
    getUnknownResource,
  } satisfies Record<OperationId, Handler>;
}
