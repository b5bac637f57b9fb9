import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient } from '../examples/client';
import { listResourcesOf, syncResource } from '../examples/sync';
import { addLearner, addLicences, createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';
import { listResourceNames } from './support/list-resources';
import { freePort } from './support/ports';
import { projectRoot } from './support/server-process';

const run = promisify(execFile);

let baseUrl: string;
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;

const requestsPerMinute = 3;
// The spec's window is 60 s; the same rules over 4 s keep the waits short.
const windowSeconds = 4;
const fixture = useTestApp({ rateLimitPerMinute: requestsPerMinute, rateLimitWindowSeconds: windowSeconds });

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db, { name: 'Formations Horizon' });
  await addLicences(fixture.db, org.orgId, 'standard', 4);
  for (let day = 1; day <= 7; day++) {
    await addLearner(fixture.db, org.orgId, { email: `apprenant${day}@exemple.fr`, at: `2026-03-0${day} 10:00` });
  }
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}/v1`;
});

describe('the integrator kit', () => {
  it('a typed client generated from openapi.yaml reads the summary', async () => {
    const client = createPartnerClient(baseUrl, (await createKey(fixture.db, org.orgId, ['read'])).key);
    const { data, response } = await client.GET('/summary');
    expect(response.status).toBe(200);
    expect(data!.data.utilisateurs.total).toBe(7);
    expect(data!.data.licences.standard.disponibles).toBe(4);
  });

  it('syncs incrementally, every row once and in order, waiting for the budget or obeying Retry-After', async () => {
    const [patient, late] = [
      (await createKey(fixture.db, org.orgId, ['read'])).key,
      (await createKey(fixture.db, org.orgId, ['read'])).key,
    ];
    const sync = (key: string, since: string, pageSize: number) => {
      const emails: string[] = [];
      const waits: string[] = [];
      return syncResource(createPartnerClient(baseUrl, key), {
        resource: '/users',
        since,
        pageSize,
        onRows: (rows) => {
          emails.push(...rows.map((row) => row.email as string));
        },
        onWait: (_seconds, reason) => {
          waits.push(reason);
        },
      }).then((result) => ({ ...result, emails, waits }));
    };
    // Each key has its own budget; the second one's is spent before its sync starts.
    for (let i = 0; i < requestsPerMinute; i++) await fetch(`${baseUrl}/summary`, { headers: { authorization: `Bearer ${late}` } });
    const [budgeted, refused] = await Promise.all([sync(patient, '2026-03-01', 2), sync(late, '2026-03-06', 5)]);

    // Seven rows in pages of two: the fourth request would exceed the budget of three, so the
    // sync waits for a place to free instead of collecting a 429.
    expect(budgeted.emails).toEqual([1, 2, 3, 4, 5, 6, 7].map((day) => `apprenant${day}@exemple.fr`));
    expect(budgeted.pages).toBe(4);
    expect(budgeted.waits).toEqual(['budget']);
    // A key whose budget is already spent gets a 429 and waits Retry-After, then goes on.
    expect(refused.waits).toEqual(['429']);
    expect(refused.emails).toEqual(['apprenant6@exemple.fr', 'apprenant7@exemple.fr']);
  }, 60_000);

  it('syncs every list resource of the served document, which are the server’s own', async () => {
    const resources = await listResourcesOf(baseUrl);
    expect(resources).toEqual(listResourceNames);
    // A key each: every resource's sync has a budget of its own.
    const results = await Promise.all(
      resources.map(async (resource) => {
        const key = (await createKey(fixture.db, org.orgId, ['read'])).key;
        const rows: Record<string, unknown>[] = [];
        const result = await syncResource(createPartnerClient(baseUrl, key), {
          resource: `/${resource}` as never,
          since: '2026-03-01',
          year: 2026,
          onRows: (page) => {
            rows.push(...page);
          },
        });
        return { resource, ...result, rows };
      }),
    );
    for (const { resource, pages, waited } of results) expect({ resource, pages, waited }).toEqual({ resource, pages: 1, waited: 0 });
    expect(results.find((result) => result.resource === 'users')!.rows).toHaveLength(7);
    expect(results.find((result) => result.resource === 'learners')!.rows).toHaveLength(7);
  });
});

/** The command line as the README gives it (`npx tsx examples/sync.ts …`): its exit code, stdout and stderr. */
async function syncCommand(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'examples/sync.ts', ...args], {
      cwd: projectRoot,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the sync command line', () => {
  it('--help prints a French usage that names every option, and exits 0', async () => {
    const { code, stdout, stderr } = await syncCommand(['--help']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Synchronisation incrémentale/);
    for (const option of ['--base', '--key', '--since', '--resource', '--year', '--help']) expect(stdout).toContain(option);
    // The resources are the server's, read from its document when the sync runs.
    expect(stdout).toContain('GET /openapi.json');
  });

  it.each([
    [['--nom', 'x'], /^Erreur : option non reconnue ou incomplète : --nom\.\n/],
    [['--since', '2026-01-01'], /^Erreur : indiquez la clé d’API avec --key\.\n/],
    [['--base', 'localhost:3000', '--key', 'sk_live_x', '--since', '2026-01-01'], /^Erreur : --base attend une adresse http/],
  ])('refuses %j in French with its usage, and exits 2', async (args, message) => {
    const { code, stdout, stderr } = await syncCommand(args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr).toContain('Usage : npx tsx examples/sync.ts');
    expect(stderr).not.toMatch(/\n\s+at |Error:|node:internal/);
  });

  it('refuses a resource the served document does not list, naming those it does, and exits 2', async () => {
    const { code, stdout, stderr } = await syncCommand([
      '--base',
      baseUrl,
      '--key',
      org.readKey,
      '--since',
      '2026-01-01',
      '--resource',
      'cours',
    ]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const refusal = `Erreur : ressource inconnue : cours (ressources de l’API : ${listResourceNames.join(', ')}).\n\n`;
    expect(stderr.startsWith(refusal), stderr).toBe(true);
    expect(stderr).toContain('Usage : npx tsx examples/sync.ts');
  });

  it('a server out of reach (wrong port): one French sentence naming the address, no stack, exit 1', async () => {
    const base = `http://127.0.0.1:${await freePort()}/v1`;
    const { code, stdout, stderr } = await syncCommand(['--base', base, '--key', org.readKey, '--since', '2026-03-01']);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `Serveur injoignable à ${base} (connexion refusée) : vérifiez l’adresse donnée par --base et que l’API est démarrée.\n`,
    );
  });

  it('a key the server refuses: its French refusal, exit 1', async () => {
    const { code, stderr } = await syncCommand(['--base', baseUrl, '--key', 'sk_live_inconnue', '--since', '2026-03-01']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^Le serveur a refusé la requête \(401\) : Clé .*\n$/);
  });

  it('writes one JSON line per row on stdout, the count on stderr', async () => {
    const key = (await createKey(fixture.db, org.orgId, ['read'])).key;
    const { code, stdout, stderr } = await syncCommand(['--base', baseUrl, '--key', key, '--resource', 'users', '--since', '2026-03-05']);
    expect(code).toBe(0);
    const rows = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { email: string });
    expect(rows.map((row) => row.email)).toEqual(['apprenant5@exemple.fr', 'apprenant6@exemple.fr', 'apprenant7@exemple.fr']);
    expect(stderr).toBe('3 lignes en 1 page\n');
  });
});
