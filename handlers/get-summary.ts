import { getSummary, summaryColumns } from '../db/summary';
import { csvAttachmentHeaders, csvOfRows, flattenObject } from '../src/formats/csv';
import { sheetColumns, xlsxAttachmentHeaders, xlsxFromRows } from '../src/formats/xlsx/workbook';
import type { HandlerContext, OperationHandler } from './context';
import { buildMeta, requestedYear, resolveLearner } from './request-scope';

/** GET /summary: the organisation's (or one learner's) counts; `year`, `updated_since`, `programme` do not apply. */
export function createGetSummary(context: HandlerContext): OperationHandler<'getSummary'> {
  return async (request, reply) => {
    const query = request.query;
    const learner = await resolveLearner(context, request, query);
    const summary = await getSummary(context.db, request.caller.orgId, learner?.membershipId ?? null);
    if (query.format === 'csv' || query.format === 'xlsx') {
      const row = flattenObject(summary);
      async function* oneChunk() {
        yield [row];
      }
      return query.format === 'csv'
        ? reply.headers(csvAttachmentHeaders('summary.csv')).send(csvOfRows(summaryColumns, [row]))
        : reply.headers(xlsxAttachmentHeaders('summary.xlsx')).send(xlsxFromRows('summary', sheetColumns(summaryColumns), oneChunk()));
    }
    return {
      resource: 'summary',
      meta: buildMeta(request, { year: requestedYear(query), truncated: false, updatedSince: null, learner, programme: null }),
      data: summary,
    };
  };
}
