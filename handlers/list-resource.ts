import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ResourceDefinition } from '../db/resources/definition';
import { countResourceRows, pageResourceRows, streamRowChunks } from '../db/resources/list';
import { csvAttachmentHeaders, csvStream } from '../src/csv';
import type { Handler, HandlerContext } from './context';
import { nextPageLink } from './next-page-link';
import { buildMeta, type ListQuery, requestedYear, resolveLearner, resolveProgramme } from './request-scope';

const defaultLimit = 100;

/**
 * The one handler of every list resource: resolves the learner and programme filters, then answers
 * the JSON envelope (a page, with the cap behind `meta.truncated`) or streams the CSV export.
 */
export function createListHandler<Row extends Record<string, unknown>>(definition: ResourceDefinition<Row>, context: HandlerContext): Handler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as ListQuery;
    const { db, config } = context;
    const year = requestedYear(query);
    const learner = await resolveLearner(context, request, query);
    const programmeSlug = definition.filtersByProgramme ? query.programme ?? null : null;
    const programmeId = await resolveProgramme(context, request, programmeSlug);
    const updatedSince = definition.filtersByUpdatedSince ? query.updated_since ?? null : null;
    const filter = { orgId: request.caller.orgId, year, updatedSince, membershipId: learner?.membershipId ?? null, programmeId };
    // One learner's rows are never capped: the cap bounds organisation-wide aggregation only.
    const cap = learner ? null : config.aggregationCap;

    if (query.format === 'csv') {
      const fileName = `${definition.name}-${definition.filtersByYear ? year : 'tous'}.csv`;
      return reply.headers(csvAttachmentHeaders(fileName)).send(csvStream(definition.columns, streamRowChunks(db, definition.select(db, filter), cap)));
    }

    const limit = query.limit ?? defaultLimit;
    const offset = query.offset ?? 0;
    const [counted, data] = await Promise.all([
      countResourceRows(db, definition as ResourceDefinition, filter, cap),
      pageResourceRows(db, definition as ResourceDefinition, filter, limit, offset, cap),
    ]);
    const hasMore = offset + data.length < counted.total;
    if (hasMore) reply.header('Link', nextPageLink(request, offset + data.length));
    return {
      resource: definition.name,
      meta: buildMeta(request, { year, truncated: counted.truncated, updatedSince, learner, programme: programmeSlug }),
      pagination: { limit, offset, count: data.length, total: counted.total, has_more: hasMore },
      data,
    };
  };
}
