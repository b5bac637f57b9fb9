import type { FastifyRequest } from 'fastify';
import type { components } from '../codegen/openapi';
import { ApiError } from '../src/errors';

type ResourceName = components['schemas']['UnknownResourceError']['available'][number];

/** Every resource name of GET /{resource}, in the contract's order (the contract's own list, checked both ways). */
export const resourceNames = [
  'learners',
  'users',
  'summary',
  'attendance',
  'evaluations',
  'quiz-answers',
  'documents',
  'satisfaction',
  'enrollments',
  'progress',
  'logins',
  'tutoring-ratings',
  'lesson-ratings',
] as const satisfies readonly ResourceName[];
type Missing = Exclude<ResourceName, (typeof resourceNames)[number]>;
// Names a resource of the contract missing from the list, if any: then `true` does not fit.
const noResourceMissing: [Missing] extends [never] ? true : Missing = true;
void noResourceMissing;

/**
 * GET /{resource} for a name that is none of the resources (the known ones have their own route).
 * The path is in openapi.yaml's `x-unlisted-paths`, not `paths`, so the generated `operations` have
 * no type for it: its one parameter is typed here.
 */
export async function getUnknownResource(request: FastifyRequest<{ Params: { resource: string } }>): Promise<never> {
  const { resource } = request.params;
  throw new ApiError('unknown_resource', `Ressource « ${resource} » inconnue.`, { available: [...resourceNames] });
}
