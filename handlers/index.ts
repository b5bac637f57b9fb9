import type { operations } from '../codegen/openapi';
import { usersResource } from '../db/resources/users';
import { ApiError } from '../src/errors';
import type { Handler, HandlerContext } from './context';
import { createCreateUsers } from './create-users';
import { createGetSummary } from './get-summary';
import { getUnknownResource } from './get-unknown-resource';
import { createListHandler } from './list-resource';

export type OperationId = keyof operations;

/** An operation whose issue is not done yet answers 501, never made-up data. */
function notImplemented(operation: string): Handler {
  return async () => {
    throw new ApiError('not_implemented', `L’opération « ${operation} » n’est pas encore disponible.`);
  };
}

/**
 * Every operation of openapi.yaml, by operationId. The `satisfies` makes a missing or misspelled
 * operation a compile error instead of a 500 at request time.
 */
export function createHandlers(context: HandlerContext) {
  return {
    listLearners: notImplemented('listLearners'),
    listUsers: createListHandler(usersResource, context),
    createUsers: createCreateUsers(context),
    getSummary: createGetSummary(context),
    listAttendance: notImplemented('listAttendance'),
    listEvaluations: notImplemented('listEvaluations'),
    listQuizAnswers: notImplemented('listQuizAnswers'),
    listDocuments: notImplemented('listDocuments'),
    listSatisfaction: notImplemented('listSatisfaction'),
    listEnrollments: notImplemented('listEnrollments'),
    listProgress: notImplemented('listProgress'),
    listLogins: notImplemented('listLogins'),
    listTutoringRatings: notImplemented('listTutoringRatings'),
    listLessonRatings: notImplemented('listLessonRatings'),
    getActivityReport: notImplemented('getActivityReport'),
    getUnknownResource,
  } satisfies Record<OperationId, Handler>;
}
