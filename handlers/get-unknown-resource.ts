import type { FastifyRequest } from 'fastify';
import { ApiError } from '../src/errors';
import type { Handler } from './context';

/** Every resource name of GET /{resource}, in the contract's order. */
export const resourceNames = [
  'learners', 'users', 'summary', 'attendance', 'evaluations', 'quiz-answers', 'documents',
  'satisfaction', 'enrollments', 'progress', 'logins', 'tutoring-ratings', 'lesson-ratings',
] as const;

/** GET /{resource} for a name that is none of the resources (the known ones have their own route). */
export const getUnknownResource: Handler = async (request: FastifyRequest) => {
  const { resource } = request.params as { resource: string };
  throw new ApiError('unknown_resource', `Ressource « ${resource} » inconnue.`, { available: [...resourceNames] });
};
