import type { FastifyRequest } from 'fastify';
import { findLearner, type LearnerIdentity } from '../db/learners';
import { currentParisYear, formatParisDateTime } from '../db/paris-time';
import { findProgrammeId } from '../db/programmes';
import { ApiError } from '../src/http/errors';
import type { HandlerContext, ListQuery, Meta } from './context';

/** The learner named by `email` / `user_id`, or null for the organisation; 404 when unknown here (docs/decisions.md#errors). */
export async function resolveLearner(context: HandlerContext, request: FastifyRequest, query: ListQuery): Promise<LearnerIdentity | null> {
  if (!query.email && !query.user_id) return null;
  const learner = await findLearner(context.db, request.caller.orgId, { email: query.email, userId: query.user_id });
  if (!learner) {
    throw new ApiError(
      'unknown_learner',
      query.email
        ? `Aucun apprenant de votre organisation n’a l’adresse « ${query.email} ».`
        : `Aucun apprenant de votre organisation n’a l’identifiant « ${query.user_id} ».`,
      { param: query.email ? 'email' : 'user_id' },
    );
  }
  return learner;
}

/** The programme named by `programme` (null when absent); 400 when the organisation has none of that slug. */
export async function resolveProgramme(
  context: HandlerContext,
  request: FastifyRequest,
  slug: string | null | undefined,
): Promise<string | null> {
  if (slug === undefined || slug === null) return null;
  const programmeId = await findProgrammeId(context.db, request.caller.orgId, slug);
  if (programmeId === null) {
    throw new ApiError('unknown_programme', `Paramètre « programme » invalide : aucun programme « ${slug} » dans votre organisation.`, {
      param: 'programme',
    });
  }
  return programmeId;
}

export function buildMeta(
  request: FastifyRequest,
  parts: { year: number; truncated: boolean; updatedSince: string | null; learner: LearnerIdentity | null; programme: string | null },
): Meta {
  return {
    org_name: request.caller.orgName,
    year: parts.year,
    generated_at: formatParisDateTime(new Date()),
    truncated: parts.truncated,
    updated_since: parts.updatedSince,
    ...(parts.learner ? { learner: { user_id: parts.learner.userId, email: parts.learner.email } } : {}),
    programme: parts.programme,
  };
}

export function requestedYear(query: ListQuery): number {
  return query.year ?? currentParisYear();
}
