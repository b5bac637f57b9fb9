import { loadResourceDefinitions } from '../db/resource-registry';
import type { ListOperationId, ListResource } from '../db/resources/definition';
import { listOperations } from '../src/openapi-document';
import type { HandlerContext, OperationHandler, OperationId } from './context';
import { createCreateUsers } from './create-users';
import { createGetActivityReport } from './get-activity-report';
import { createGetSummary } from './get-summary';
import { availableResources, createGetUnknownResource } from './get-unknown-resource';
import { createListHandler, type ListHandler } from './list-resource';

type ListHandlers = { [Id in ListOperationId]: OperationHandler<Id> };
type OtherHandlers = { [Id in Exclude<OperationId, ListOperationId>]: OperationHandler<Id> };

/**
 * Every operation of openapi.yaml (the parsed `document`), by operationId, and GET /{resource} of
 * its `x-unlisted-paths`. The list operations are the document's, each answered by the one list
 * handler over its definition file (db/resource-registry.ts), which rejects the start when one has
 * none. The others are written here, each typed by its own operation of the generated contract: the
 * `satisfies` makes a missing or misspelled one, or a handler that does not follow its operation, a
 * compile error instead of a 500 at request time.
 */
export async function createHandlers(context: HandlerContext, document: Record<string, any>) {
  const resources = await loadResourceDefinitions(listOperations(document));
  return {
    ...createListHandlers(resources, context),
    createUsers: createCreateUsers(context),
    getSummary: createGetSummary(context),
    getActivityReport: createGetActivityReport(context),
    getUnknownResource: createGetUnknownResource(availableResources(document, resources)),
  } satisfies ListHandlers & OtherHandlers & { getUnknownResource: ReturnType<typeof createGetUnknownResource> };
}

function createListHandlers(resources: readonly ListResource[], context: HandlerContext) {
  // One definition per list operation of the document, and codegen/ is generated from that same
  // document (make codegen-check): every ListOperationId has its handler.
  return Object.fromEntries(resources.map((resource) => [resource.operationId, createListHandler(resource, context)])) as Record<
    ListOperationId,
    ListHandler
  >;
}
