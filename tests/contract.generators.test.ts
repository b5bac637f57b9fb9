import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openapiPath } from '../src/openapi-document';
import { createWorkspace, type Workspace } from './support/contract-workspace';
import { addLearner, addLicences, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

/*
 * What integrators do with openapi.yaml: generate a client with the generator their team uses,
 * compile it in a strict project, and call the API. Five independent generators from the npm
 * registry (all offline), each with a small program written as an integrator would write it:
 * - it compiles under `strict`, which proves the types: a nullable enum (`licence_type`,
 *   `licence_statut`) admits `null`, a bulk enrolment needs no `atomic`;
 * - it runs against the real server on a socket: a `users` row whose licence is null, read through
 *   the client (openapi-zod-client's also validates it with zod), and a bulk enrolment without
 *   `atomic`.
 * No client has a method for GET /{resource}, which only ever answers 404.
 */

const fixture = useTestApp();
let baseUrl: string;
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let workspace: Workspace;
const learnerWithoutLicence = 'sans.licence@exemple.fr';

/** What each program prints: the row read and the bulk enrolment's answer. */
interface CallResult {
  licence_type: unknown;
  licence_statut: unknown;
  enrolled: number;
  results: { email: string; status?: string }[];
}

/** The generator, the program that uses its output, and how to run the generator. */
interface Generator {
  name: string;
  generate(workspace: Workspace): Promise<unknown>;
  program: string;
}

// Every program gets the base URL and the two keys as arguments, and prints one CallResult.
const programPrelude = `const [baseUrl, readKey, writeKey] = process.argv.slice(2) as [string, string, string];
const email = ${JSON.stringify(learnerWithoutLicence)};
`;

const generators: Generator[] = [
  {
    name: 'openapi-typescript',
    generate: (workspace) => workspace.exec('openapi-typescript', [openapiPath, '-o', 'openapi-typescript/partner-api.d.ts']),
    program: `import createClient from 'openapi-fetch';
import type { paths } from './partner-api';
${programPrelude}
const read = createClient<paths, 'application/json'>({ baseUrl, headers: { Authorization: \`Bearer \${readKey}\` } });
const write = createClient<paths, 'application/json'>({ baseUrl, headers: { Authorization: \`Bearer \${writeKey}\` } });
const { data } = await read.GET('/users', { params: { query: { email } } });
const row = data!.data[0]!;
// Compiles only if the generated types admit null (and the header is optional on a JSON answer).
const licenceType: typeof row.licence_type = null;
const licenceStatut: typeof row.licence_statut = null;
type UsersHeaders = paths['/users']['get']['responses'][200]['headers'];
const noDisposition: UsersHeaders['Content-Disposition'] = undefined;
void [licenceType, licenceStatut, noDisposition];
const { data: bulk } = await write.POST('/users', { body: { users: [{ email: 'openapi-typescript@exemple.fr' }] } });
if (!bulk || !('results' in bulk)) throw new Error('no bulk answer');
console.log(JSON.stringify({ licence_type: row.licence_type, licence_statut: row.licence_statut, enrolled: bulk.summary.enrolled, results: bulk.results }));
`,
  },
  {
    name: 'hey-api',
    generate: (workspace) =>
      workspace.exec('openapi-ts', ['-i', openapiPath, '-o', 'hey-api/client', '-c', '@hey-api/client-fetch', '--no-log-file', '--silent']),
    program: `import { createClient } from './client/client';
import { createUsers, listUsers } from './client/sdk.gen';
import type { UserRow } from './client/types.gen';
${programPrelude}
const read = createClient({ baseUrl, headers: { Authorization: \`Bearer \${readKey}\` } });
const write = createClient({ baseUrl, headers: { Authorization: \`Bearer \${writeKey}\` } });
const { data } = await listUsers({ client: read, query: { email }, throwOnError: true });
if (typeof data === 'string') throw new Error('CSV instead of JSON');
const row = data.data[0]!;
const licenceType: UserRow['licence_type'] = null;
const licenceStatut: UserRow['licence_statut'] = null;
void [licenceType, licenceStatut];
const { data: bulk } = await createUsers({ client: write, body: { users: [{ email: 'hey-api@exemple.fr' }] }, throwOnError: true });
if (!('results' in bulk)) throw new Error('no bulk answer');
console.log(JSON.stringify({ licence_type: row.licence_type, licence_statut: row.licence_statut, enrolled: bulk.summary.enrolled, results: bulk.results }));
`,
  },
  {
    name: 'orval',
    generate: (workspace) => {
      // Orval writes the base URL into the client: the server's, known before generation.
      const config = {
        partner: {
          input: { target: openapiPath },
          output: { target: path.join(workspace.dir, 'orval', 'api.ts'), client: 'fetch', baseUrl },
        },
      };
      const configFile = workspace.write('orval/orval.config.cjs', `module.exports = ${JSON.stringify(config)};\n`);
      return workspace.exec('orval', ['--config', configFile]);
    },
    program: `import { createUsers, listUsers, type UserRow } from './api';
${programPrelude}
void baseUrl;
const listed = await listUsers({ email }, { headers: { Authorization: \`Bearer \${readKey}\` } });
// JSON or a file (CSV, xlsx), as the document says: a file comes as a Blob.
if (listed.status !== 200 || typeof listed.data === 'string' || listed.data instanceof Blob) throw new Error(\`users: \${listed.status}\`);
const row = listed.data.data[0]!;
const licenceType: UserRow['licence_type'] = null;
const licenceStatut: UserRow['licence_statut'] = null;
void [licenceType, licenceStatut];
const enrolled = await createUsers({ users: [{ email: 'orval@exemple.fr' }] }, { headers: { Authorization: \`Bearer \${writeKey}\` } });
if (enrolled.status !== 200 || !('results' in enrolled.data)) throw new Error(\`bulk: \${enrolled.status}\`);
console.log(JSON.stringify({ licence_type: row.licence_type, licence_statut: row.licence_statut, enrolled: enrolled.data.summary.enrolled, results: enrolled.data.results }));
`,
  },
  {
    name: 'openapi-zod-client',
    generate: (workspace) =>
      workspace.exec('openapi-zod-client', [openapiPath, '-o', path.join(workspace.dir, 'openapi-zod-client', 'client.ts')]),
    program: `import { createApiClient } from './client';
${programPrelude}
// Zodios validates every answer with the generated zod schemas: a null the schema refused would throw.
const api = createApiClient(baseUrl);
const listed = await api.listUsers({ queries: { email }, headers: { Authorization: \`Bearer \${readKey}\` } });
if (typeof listed === 'string') throw new Error('CSV instead of JSON');
const row = listed.data[0]!;
const licenceType: typeof row.licence_type = null;
const licenceStatut: typeof row.licence_statut = null;
void [licenceType, licenceStatut];
const bulk = await api.createUsers({ users: [{ email: 'openapi-zod-client@exemple.fr' }] }, { headers: { Authorization: \`Bearer \${writeKey}\` } });
if (!('results' in bulk)) throw new Error('no bulk answer');
console.log(JSON.stringify({ licence_type: row.licence_type, licence_statut: row.licence_statut, enrolled: bulk.summary.enrolled, results: bulk.results }));
`,
  },
  {
    name: 'swagger-typescript-api',
    generate: (workspace) =>
      workspace.exec('swagger-typescript-api', [
        'generate',
        '--path',
        openapiPath,
        '--output',
        path.join(workspace.dir, 'swagger-typescript-api'),
        '--name',
        'api.ts',
        '--silent',
      ]),
    program: `import { Api, type UserRow } from './api';
${programPrelude}
const read = new Api({ baseUrl, baseApiParams: { headers: { Authorization: \`Bearer \${readKey}\` } } });
const write = new Api({ baseUrl, baseApiParams: { headers: { Authorization: \`Bearer \${writeKey}\` } } });
const listed = await read.users.listUsers({ email });
if (typeof listed.data === 'string') throw new Error('CSV instead of JSON');
const row = listed.data.data[0]!;
const licenceType: UserRow['licence_type'] = null;
const licenceStatut: UserRow['licence_statut'] = null;
void [licenceType, licenceStatut];
const bulk = await write.users.createUsers({ users: [{ email: 'swagger-typescript-api@exemple.fr' }] });
if (!('results' in bulk.data)) throw new Error('no bulk answer');
console.log(JSON.stringify({ licence_type: row.licence_type, licence_statut: row.licence_statut, enrolled: bulk.data.summary.enrolled, results: bulk.data.results }));
`,
  },
];

/** Every file a generator wrote, with its text. */
function generatedFiles(dir: string): [string, string][] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((file) => path.join(dir, file))
    .filter((file) => statSync(file).isFile() && /\.ts$/.test(file) && !file.endsWith('call.ts'))
    .map((file) => [file, readFileSync(file, 'utf8')]);
}

let typecheckOutput = '';

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db, { name: 'Formations Générateurs' });
  await addLearner(fixture.db, org.orgId, { email: learnerWithoutLicence, licence: null });
  await addLicences(fixture.db, org.orgId, 'standard', generators.length);
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}/v1`;

  // Generated once per run, side by side (each beside its program), then compiled by one strict tsc.
  workspace = createWorkspace('generated-clients');
  for (const generator of generators) workspace.write(`${generator.name}/call.ts`, generator.program);
  await Promise.all(generators.map((generator) => generator.generate(workspace)));
  typecheckOutput = await workspace.typecheck();
}, 240_000);

describe('clients generated from openapi.yaml by the generators integrators use', () => {
  it('compile under strict, with the programs that use them', () => {
    expect(typecheckOutput).toBe('');
  });

  it('have no method for GET /{resource}, which only ever answers 404', () => {
    for (const generator of generators) {
      const files = generatedFiles(path.join(workspace.dir, generator.name));
      expect(files.length, generator.name).toBeGreaterThan(0);
      for (const [file, text] of files) {
        expect(text, `${generator.name}: ${file}`).not.toMatch(/getUnknownResource|["']\/\{resource\}["']/i);
      }
      // The real operations are there: the check above is not vacuous.
      expect(
        files.some(([, text]) => /listUsers|\/users/.test(text)),
        generator.name,
      ).toBe(true);
    }
  });

  it.each(generators.map((generator) => generator.name))(
    '%s: reads a licence that is null and enrols a batch without `atomic` on the real server',
    async (name) => {
      expect(typecheckOutput, 'the programs must compile first').toBe('');
      const output = await workspace.runTs(`${name}/call.ts`, [baseUrl, org.readKey, org.writeKey]);
      const result = JSON.parse(output.trim().split('\n').at(-1)!) as CallResult;
      expect(result).toEqual({
        licence_type: null,
        licence_statut: null,
        enrolled: 1,
        results: [{ email: `${name}@exemple.fr`, status: 'pending', member_id: expect.any(String) }],
      });
    },
    60_000,
  );
});
