import type { FastifyRequest } from 'fastify';
import { ApiError } from '../src/http/errors';

/**
 * The names GET /{resource} offers in its 404 (`available`): every list resource and `summary` (a
 * resource with a handler of its own), in the order of openapi.yaml's paths, as the contract's
 * `UnknownResourceError` lists them (tests/resources.registry.test.ts holds the two equal).
 */
export function availableResources(document: Record<string, any>, listResources: readonly { name: string }[]): string[] {
  const names = new Set([...listResources.map((resource) => resource.name), 'summary']);
  return Object.keys(document.paths ?? {})
    .map((route) => route.slice(1))
    .filter((name) => names.has(name));
}

/**
 * GET /{resource} for a name that is none of the resources (the known ones have their own route).
 * The path is in openapi.yaml's `x-unlisted-paths`, not `paths`, so the generated `operations` have
 * no type for it: its one parameter is typed here.
 */
export function createGetUnknownResource(available: readonly string[]) {
  return async function getUnknownResource(request: FastifyRequest<{ Params: { resource: string } }>): Promise<never> {
    const { resource } = request.params;
    throw new ApiError('unknown_resource', `Ressource « ${resource} » inconnue.`, { available: [...available] });
  };
}
