import { loadResourceDefinitions } from '../../db/resource-registry';
import type { ListResource } from '../../db/resources/definition';
import { availableResources } from '../../handlers/get-unknown-resource';
import { listOperations, loadOpenapiDocument } from '../../src/openapi-document';

// The resources as the server finds them (handlers/index.ts): the list operations of openapi.yaml,
// each with its definition file. Tests that go over every resource go over these.

const document = loadOpenapiDocument();

/** Every list resource, in the order of openapi.yaml's paths. */
export const listResources: readonly ListResource[] = await loadResourceDefinitions(listOperations(document));

/** Their wire names, in the same order. */
export const listResourceNames: readonly string[] = listResources.map((resource) => resource.name);

/** Every name GET /{resource} offers in its 404: the list resources and `summary`, in the contract's order. */
export const resourceNames: readonly string[] = availableResources(document, listResources);

/** The definition of a list resource, by its wire name. */
export function listResource(name: string): ListResource {
  const found = listResources.find((resource) => resource.name === name);
  if (!found) throw new Error(`${name} is not a list resource of openapi.yaml`);
  return found;
}

/** The resource names a document's 404 offers (`UnknownResourceError`'s `available`), in its order. */
export function offeredResourceNames(contract: Record<string, any>): string[] {
  const parts: Record<string, any>[] = contract.components.schemas.UnknownResourceError.allOf;
  return parts.find((part) => part.properties?.available)!.properties.available.items.enum;
}
