import type { ListResource } from './resources/definition';

/** A list operation of openapi.yaml: its operationId and the one segment of its path, the resource's wire name. */
export interface ListOperation {
  readonly operationId: string;
  readonly name: string;
}

/** A path segment that names a file of db/resources/, and nothing outside it. */
const fileName = /^[a-z][a-z0-9-]*$/;

/**
 * The definition of each list operation of openapi.yaml, in the order given: the one definition
 * that `db/resources/<name>.ts` exports for that operation. Nothing lists the resources: the contract
 * says which exist and each file says what it is, so adding a resource is its file and its operation.
 * An operation without its definition rejects, with one French sentence naming the file to write.
 */
export async function loadResourceDefinitions(operations: readonly ListOperation[]): Promise<ListResource[]> {
  return Promise.all(operations.map(loadResourceDefinition));
}

async function loadResourceDefinition({ operationId, name }: ListOperation): Promise<ListResource> {
  const operation = `l’opération ${operationId} de openapi.yaml (GET /${name})`;
  if (!fileName.test(name))
    throw new Error(
      `${operation} ne peut pas avoir de définition : son chemin doit être un seul segment en minuscules, chiffres et tirets.`,
    );
  const file = `db/resources/${name}.ts`;
  let fileExports: Record<string, unknown>;
  try {
    // A template literal, so that esbuild bundles every file of db/resources/ (scripts/build.mjs),
    // and tsx or vitest load the one asked.
    fileExports = await import(`./resources/${name}.ts`);
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ');
    throw new Error(
      `${operation} n’a pas de définition : ${file} ne se charge pas (« ${reason} »). Écrivez ce fichier, ou retirez l’opération.`,
    );
  }
  const definitions = Object.values(fileExports).filter(
    (value): value is ListResource => typeof value === 'object' && value !== null && (value as ListResource).operationId === operationId,
  );
  if (definitions.length !== 1)
    throw new Error(`${file} doit exporter une définition de ${operation}, et une seule : il en exporte ${definitions.length}.`);
  const [definition] = definitions as [ListResource];
  if (definition.name !== name)
    throw new Error(`la définition de ${operation} s’appelle « ${definition.name} » : elle doit porter le nom de son chemin, « ${name} ».`);
  return definition;
}
