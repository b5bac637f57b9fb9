import { gatherActivityReport } from '../db/activity-report';
import { formatParisDateTime } from '../db/paris-time';
import { ApiError } from '../src/http/errors';
import { activityReportFileName, pdfAttachmentHeaders } from '../src/pdf/report-file-name';
import type { HandlerContext, OperationHandler } from './context';
import { requestedYear, resolveLearner, resolveProgramme } from './request-scope';

/**
 * `GET /activity-report`: one learner's audit PDF for a year, built from the list resources' rows
 * and rendered off the event loop by the context's worker pool.
 */
export function createGetActivityReport(context: HandlerContext): OperationHandler<'getActivityReport'> {
  return async (request, reply) => {
    const query = request.query;
    if (!query.email && !query.user_id) throw new ApiError('learner_identifier_missing');
    const learner = (await resolveLearner(context, request, query))!;
    const programmeId = await resolveProgramme(context, request, query.programme);
    const data = await gatherActivityReport(context.db, {
      orgId: request.caller.orgId,
      orgName: request.caller.orgName,
      learner,
      year: requestedYear(query),
      programmeId,
      generatedAt: formatParisDateTime(new Date()),
    });
    const pdf = await context.renderPool.renderActivityReport(data);
    return reply.headers(pdfAttachmentHeaders(activityReportFileName(data.learner, data.year))).send(pdf);
  };
}
