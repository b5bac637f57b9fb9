import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReportPrefix } from '../src/start-phases';
import { bearer } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { offeredResourceNames } from './support/list-resources';
import { projectRoot, runToExit, type ServerProcess, startServerProcess } from './support/server-process';

// Adding a list resource is its definition file and its operation in openapi.yaml, nothing else:
// done here in a copy of the project, as an engineer would, and the copy's server serves it.

const run = promisify(execFile);
const database = useTestDatabase();

let scratch: string;
let clone: string;
let server: ServerProcess | undefined;

/** A command run in the copy, to its end (rejects on a non-zero exit, with what it said). */
const inClone = (command: string, args: string[]) => run(command, args, { cwd: clone, maxBuffer: 16 * 1024 * 1024 });

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'partner-api-adding-'));
  clone = path.join(scratch, 'partner-api');
  // The project as committed would be, its packages linked from this one's.
  await cp(projectRoot, clone, {
    recursive: true,
    filter: (source) => !/^(node_modules|\.git|\.data|dist|coverage)$/.test(path.relative(projectRoot, source)),
  });
  await mkdir(path.join(clone, 'node_modules'));
  for (const entry of await readdir(path.join(projectRoot, 'node_modules')))
    await symlink(path.join(projectRoot, 'node_modules', entry), path.join(clone, 'node_modules', entry));
  await inClone('git', ['init', '--quiet']);
  await inClone('git', ['add', '--all']);
  await inClone('git', ['-c', 'user.name=test', '-c', 'user.email=test@exemple.fr', 'commit', '--quiet', '--message', 'as it is']);
});
afterAll(async () => {
  await server?.stop();
  await rm(scratch, { recursive: true, force: true });
});

/**
 * The operation of `organisation-facts` in openapi.yaml, written as one would: `tutoring-ratings`'
 * copied (the same parameters, headers and answers as every list) with its own name, words and
 * schemas; the row and envelope schemas; its name among the 404's `available`.
 */
function withOrganisationFacts(openapi: string): string {
  const start = openapi.indexOf('  /tutoring-ratings:\n');
  const end = openapi.indexOf('\n  /', start + 1);
  const operation = openapi
    .slice(start, end)
    .replace('/tutoring-ratings:', '/organisation-facts:')
    .replace('operationId: listTutoringRatings', 'operationId: listOrganisationFacts')
    .replace(/summary: .*\n/, 'summary: L’organisation de la clé\n')
    .replace(
      /description: \|\n(?: {8}.*\n|\n)+?(?= {6}parameters:)/,
      'description: Une ligne par organisation de la clé, avec son nom et sa date de création.\n',
    )
    .replace('#/components/schemas/TutoringRatingsList', '#/components/schemas/OrganisationFactsList')
    .replace(
      /(text\/csv:\n(?: {14}.*\n)+? {14}example: \|\n)(?: {16}.*\n)+/,
      '$1                nom,cree_le\n                Formations Horizon,2026-01-05\n',
    );
  const schemas = `    OrganisationFactRow:
      type: object
      description: L'organisation de la clé.
      required: [nom, cree_le]
      additionalProperties: false
      properties:
        nom:
          type: string
        cree_le:
          type: string
          format: date
    OrganisationFactsList:
      type: object
      description: Enveloppe JSON de la ressource \`organisation-facts\` (une page de lignes).
      required: [resource, meta, pagination, data]
      additionalProperties: false
      properties:
        resource:
          type: string
          const: organisation-facts
        meta:
          $ref: '#/components/schemas/Meta'
        pagination:
          $ref: '#/components/schemas/Pagination'
        data:
          type: array
          items:
            $ref: '#/components/schemas/OrganisationFactRow'
`;
  const afterLessonRatings = openapi.indexOf('\n  /', openapi.indexOf('  /lesson-ratings:\n') + 1) + 1;
  const withSchemas = openapi.replace('    UnknownResourceError:\n', `${schemas}    UnknownResourceError:\n`);
  const enumLine = /( {16}enum: \[learners, [^\]]*)\]/;
  expect(withSchemas).toMatch(enumLine);
  return `${withSchemas.slice(0, afterLessonRatings)}${operation}\n${withSchemas.slice(afterLessonRatings)}`.replace(
    enumLine,
    '$1, organisation-facts]',
  );
}

const definition = `import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import { parisDate } from '../render';
import { type ListResourceDefinition, typedColumns } from './definition';

type OrganisationFactRow = components['schemas']['OrganisationFactRow'];

/** The caller's organisation, in one row. */
export const organisationFactsResource: ListResourceDefinition<'listOrganisationFacts'> = {
  operationId: 'listOrganisationFacts',
  name: 'organisation-facts',
  ...typedColumns<OrganisationFactRow>({ nom: 'text', cree_le: 'date' }),
  filtersByYear: false,
  filtersByUpdatedSince: false,
  filtersByProgramme: false,
  select(db, filter) {
    return db
      .selectFrom('organisations as o')
      .where('o.id', '=', filter.orgId)
      .select(['o.name as nom', parisDate(sql.ref('o.created_at')).as('cree_le')])
      .orderBy('o.id');
  },
};
`;

describe('adding a list resource', () => {
  it('is its operation in openapi.yaml and its definition file: the server then pages it, exports it and names it in its 404', {
    timeout: 240_000,
  }, async () => {
    const openapiPath = path.join(clone, 'openapi.yaml');
    await writeFile(openapiPath, withOrganisationFacts(await readFile(openapiPath, 'utf8')));
    await inClone('npm', ['run', '--silent', 'codegen']);
    // A server built now has the operation without its definition.
    await inClone(process.execPath, ['scripts/build.mjs']);
    await writeFile(path.join(clone, 'db', 'resources', 'organisation-facts.ts'), definition);
    // The whole copy, tests included, type-checks as it is, while the servers start.
    const typeCheck = inClone('npx', ['tsc', '--noEmit']);
    typeCheck.catch(() => undefined);

    // Without its definition, the start stops, saying which file to write.
    const environment = { DATABASE_URL: database.url, PORT: '0', DEMO: '0', LOG_LEVEL: 'warn' };
    const refused = await runToExit({ start: true }, environment, clone);
    expect(refused.code, refused.stderr + refused.stdout).toBe(1);
    const lines = refused.stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith(startReportPrefix));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^Démarrage impossible : l’opération listOrganisationFacts de openapi\.yaml \(GET \/organisation-facts\) n’a pas de définition : db\/resources\/organisation-facts\.ts ne se charge pas \(« .+ »\)\. Écrivez ce fichier, ou retirez l’opération\.$/,
    );

    // With it, the server serves the resource.
    await inClone(process.execPath, ['scripts/build.mjs']);
    const [horizon, other] = [
      await createOrgWithKeys(database.db, { name: 'Formations Horizon' }),
      await createOrgWithKeys(database.db, { name: 'Autre organisme' }),
    ];
    server = await startServerProcess(database.url, {}, clone);
    const get = (url: string) => fetch(`${server!.baseUrl}${url}`, { headers: bearer(horizon.readKey) });

    const page = await get('/organisation-facts');
    expect(page.status).toBe(200);
    const created = await database.db
      .selectFrom('organisations')
      .select(sql<string>`to_char((created_at at time zone 'Europe/Paris')::date, 'YYYY-MM-DD')`.as('day'))
      .where('id', '=', horizon.orgId)
      .executeTakeFirstOrThrow();
    expect(await page.json()).toMatchObject({
      resource: 'organisation-facts',
      pagination: { limit: 100, offset: 0, count: 1, total: 1, has_more: false },
      data: [{ nom: 'Formations Horizon', cree_le: created.day }],
    });

    const csv = await get('/organisation-facts?format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-disposition')).toContain('filename="organisation-facts.csv"');
    expect(Buffer.from(await csv.arrayBuffer()).toString('utf8')).toBe(`\uFEFFnom,cree_le\r\nFormations Horizon,${created.day}\r\n`);

    const otherPage = await fetch(`${server.baseUrl}/organisation-facts`, { headers: bearer(other.readKey) });
    expect(((await otherPage.json()) as { data: unknown[] }).data).toEqual([{ nom: 'Autre organisme', cree_le: expect.any(String) }]);

    const unknown = await get('/cours');
    expect(unknown.status).toBe(404);
    const { available } = (await unknown.json()) as { available: string[] };
    expect(available.at(-1)).toBe('organisation-facts');
    const served = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as Record<string, any>;
    expect(available).toEqual(offeredResourceNames(served));

    await expect(typeCheck).resolves.toBeDefined();
    // Nothing else was edited: the operation, the definition, and the types generated from the one.
    const { stdout } = await inClone('git', ['status', '--porcelain']);
    expect(stdout.split('\n').filter(Boolean).sort()).toEqual([
      ' M codegen/openapi.ts',
      ' M openapi.yaml',
      '?? db/resources/organisation-facts.ts',
    ]);
  });
});
