import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadResourceDefinitions } from '../db/resource-registry';
import { listOperations, loadOpenapiDocument } from '../src/openapi-document';
import { listResourceNames, offeredResourceNames, resourceNames } from './support/list-resources';
import { projectRoot } from './support/server-process';

// The list resources are openapi.yaml's list operations, each answered by the definition that
// db/resources/<name>.ts exports for it (db/resource-registry.ts); nothing else lists them.

const document = loadOpenapiDocument();

/** Every definition the files of db/resources/ export, as `operationId /name` (a definition is a value with an `operationId`). */
async function exportedDefinitions(): Promise<string[]> {
  const folder = path.join(projectRoot, 'db', 'resources');
  const files = readdirSync(folder).filter((name) => name.endsWith('.ts'));
  const modules = await Promise.all(files.map((name) => import(path.join(folder, name)) as Promise<Record<string, unknown>>));
  return modules.flatMap((exports) =>
    Object.values(exports)
      .filter(
        (value): value is { operationId: string; name: string } => typeof (value as { operationId?: unknown })?.operationId === 'string',
      )
      .map((definition) => `${definition.operationId} /${definition.name}`),
  );
}

describe('the list resources', () => {
  it('have one definition file each, and every definition of db/resources/ answers an operation of openapi.yaml', async () => {
    const operations = listOperations(document).map(({ operationId, name }) => `${operationId} /${name}`);
    expect((await exportedDefinitions()).sort()).toEqual([...operations].sort());
  });

  it('are offered by the 404 of GET /{resource} with `summary`, as the contract lists them, in its order', () => {
    const contract = offeredResourceNames(document);
    expect(resourceNames).toEqual(contract);
    expect(resourceNames.filter((name) => name !== 'summary')).toEqual(listResourceNames);
    expect(resourceNames).toContain('summary');
  });
});

describe('a list operation without its definition', () => {
  it.each([
    [
      { operationId: 'listCourses', name: 'courses' },
      /^l’opération listCourses de openapi\.yaml \(GET \/courses\) n’a pas de définition : db\/resources\/courses\.ts ne se charge pas \(« .+ »\)\. Écrivez ce fichier, ou retirez l’opération\.$/,
    ],
    [
      { operationId: 'listCourses', name: 'definition' },
      /^db\/resources\/definition\.ts doit exporter une définition de l’opération listCourses de openapi\.yaml \(GET \/definition\), et une seule : il en exporte 0\.$/,
    ],
    [
      { operationId: 'listLogins', name: 'users' },
      /^db\/resources\/users\.ts doit exporter une définition de l’opération listLogins .* il en exporte 0\.$/,
    ],
    [
      { operationId: 'listCourses', name: '../connection' },
      /^l’opération listCourses .* ne peut pas avoir de définition : son chemin doit être un seul segment/,
    ],
  ])('stops the start with one French sentence: %j', async (operation, message) => {
    await expect(loadResourceDefinitions([operation])).rejects.toThrow(message);
  });
});
