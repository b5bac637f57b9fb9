import { beforeAll, describe, expect, it } from 'vitest';
import { createPartnerClient } from '../examples/client';
import { syncResource } from '../examples/sync';
import { addLearner, addLicences, createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

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
});
