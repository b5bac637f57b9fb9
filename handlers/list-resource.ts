import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../codegen/openapi';
import type { ListOperationId, ListResource, ResourceNameOf, RowOf } from '../db/resources/definition';
import { copyResourcePage, copyResourceRows, countResourceRows } from '../db/resources/list';
import { csvAttachmentHeaders, csvFromCopy } from '../src/formats/csv';
import { jsonRows } from '../src/formats/json-rows';
import { noRows, rowsOfCopy } from '../src/formats/row-batch';
import { sheetColumns, xlsxAttachmentHeaders, xlsxFromCopy } from '../src/formats/xlsx/workbook';
import { jsonContentType } from '../src/http/error-handler';
import type { HandlerContext, JsonAnswerOf, ListQuery, Meta, QueryOf } from './context';
import { nextPageLink } from './next-page-link';
import { buildMeta, requestedYear, resolveLearner, resolveProgramme } from './request-scope';

const defaultLimit = 100;

/** The one envelope of every list operation, around its rows. */
export interface ListEnvelope<Id extends ListOperationId> {
  resource: ResourceNameOf<Id>;
  meta: Meta;
  pagination: components['schemas']['Pagination'];
  data: RowOf<Id>[];
}

/**
 * Every list operation takes the one query string and answers the one envelope (checked here for
 * each, at compile time): the one list handler may then serve all of them.
 */
type NotTheSameShape = {
  [Id in ListOperationId]: QueryOf<Id> extends ListQuery
    ? ListQuery extends QueryOf<Id>
      ? ListEnvelope<Id> extends JsonAnswerOf<Id>
        ? never
        : Id
      : Id
    : Id;
}[ListOperationId];
// Names the operations that differ, if any: then `true` does not fit and the build fails.
const everyListHasTheSameShape: [NotTheSameShape] extends [never] ? true : NotTheSameShape = true;
void everyListHasTheSameShape;

/** The handler of a list operation: every one takes the one query string (checked above) and sends its answer itself. */
export type ListHandler = (request: FastifyRequest<{ Querystring: ListQuery }>, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * The one handler of every list resource: resolves the learner and programme filters, then answers
 * the JSON envelope (a page, with the cap behind `meta.truncated`) or streams the CSV or xlsx
 * export. The definition's rows and name are those its operation's contract gives (checked in its file).
 */
export function createListHandler(resource: ListResource, context: HandlerContext): ListHandler {
  return async (request, reply) => {
    const query = request.query;
    const { db, config } = context;
    const year = requestedYear(query);
    const learner = await resolveLearner(context, request, query);
    const programmeSlug = resource.filtersByProgramme ? (query.programme ?? null) : null;
    const programmeId = await resolveProgramme(context, request, programmeSlug);
    const updatedSince = resource.filtersByUpdatedSince ? (query.updated_since ?? null) : null;
    const filter = { orgId: request.caller.orgId, year, updatedSince, membershipId: learner?.membershipId ?? null, programmeId };
    // One learner's rows are never capped: the cap bounds organisation-wide aggregation only (docs/decisions.md#aggregation-cap).
    const cap = learner ? null : config.aggregationCap;

    // Files hold every row up to the cap, in the order of the pages, from PostgreSQL's COPY (started
    // before the answer, so that a database fault is a 503, not a cut file): the CSV and the workbook.
    // `attendance-2026`, or the resource alone when no year applies to it (`users`), as the document names them.
    const fileName = resource.filtersByYear ? `${resource.name}-${year}` : resource.name;
    if (query.format === 'csv') {
      const copy = await copyResourceRows(db, resource, filter, cap);
      return reply.headers(csvAttachmentHeaders(`${fileName}.csv`)).send(csvFromCopy(resource, copy));
    }
    if (query.format === 'xlsx') {
      const copy = await copyResourceRows(db, resource, filter, cap);
      return reply.headers(xlsxAttachmentHeaders(`${fileName}.xlsx`)).send(xlsxFromCopy(resource.name, sheetColumns(resource), copy));
    }

    const limit = query.limit ?? defaultLimit;
    const offset = query.offset ?? 0;
    const [counted, page] = await Promise.all([
      countResourceRows(db, resource, filter, cap),
      copyResourcePage(db, resource, filter, limit, offset, cap),
    ]);
    // No page past the cap: no rows.
    const rows = page === null ? noRows(resource.columns.length) : rowsOfCopy(page, resource.columns.length);
    const hasMore = offset + rows.rows < counted.total;
    const envelope: Omit<ListEnvelope<ListOperationId>, 'data'> = {
      resource: resource.name,
      meta: buildMeta(request, { year, truncated: counted.truncated, updatedSince, learner, programme: programmeSlug }),
      pagination: { limit, offset, count: rows.rows, total: counted.total, has_more: hasMore },
    };
    if (hasMore) reply.header('Link', nextPageLink(request, offset + rows.rows));
    // The envelope as JSON.stringify writes it, its rows last, written from PostgreSQL's bytes.
    const head = JSON.stringify(envelope);
    return reply.type(jsonContentType).send(jsonRows(resource, rows, `${head.slice(0, -1)},"data":`, '}'));
  };
}
