import { beforeAll, describe, expect, it } from 'vitest';
import { client, learningResources, seededOrganisation } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';

// Two organisations seeded with the same seed: the same story twice, names and all, so any row,
// email or count leaking from one into the other would show.
const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
let first: Awaited<ReturnType<typeof seededOrganisation>>;
let second: Awaited<ReturnType<typeof seededOrganisation>>;

beforeAll(async () => {
  first = await seededOrganisation(fixture.db, { name: 'Premier organisme', learners: 25, seed: 5 });
  second = await seededOrganisation(fixture.db, { name: 'Second organisme', learners: 25, seed: 5 });
}, 120_000);

async function emailsOf(orgId: string): Promise<Set<string>> {
  const rows = await fixture.db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select('a.email')
    .where('m.org_id', '=', orgId)
    .execute();
  return new Set(rows.map((row) => row.email));
}

describe('tenant isolation', () => {
  it('never returns a row, an email or a count of the other organisation', async () => {
    const [mine, theirs] = [await emailsOf(first.orgId), await emailsOf(second.orgId)];
    expect([...mine].some((email) => theirs.has(email))).toBe(false);
    for (const resource of [...learningResources, 'users']) {
      for (const year of [2025, 2026]) {
        const [a, b] = [client(fixture.app, first.readKey), client(fixture.app, second.readKey)];
        const [rowsA, rowsB] = [await a.all(resource, `year=${year}`), await b.all(resource, `year=${year}`)];
        for (const row of rowsA) expect(mine.has(row.email as string), `${resource} ${row.email}`).toBe(true);
        for (const row of rowsB) expect(theirs.has(row.email as string), `${resource} ${row.email}`).toBe(true);
        // The same story in both: equal counts, so neither count holds the other's rows.
        expect(rowsA.length, resource).toBe(rowsB.length);
        const csv = await a.csv(resource, `year=${year}`);
        const emailColumn = csv.header.indexOf('email');
        for (const cells of csv.rows) expect(mine.has(cells[emailColumn]!)).toBe(true);
      }
    }
    const summary = (await client(fixture.app, first.readKey).json('/v1/summary')).data;
    expect(summary.utilisateurs.total).toBe(mine.size);
  });

  it('answers 404 for a learner of the other organisation, by email or user_id, JSON or CSV', async () => {
    const other = await fixture.db
      .selectFrom('memberships as m')
      .innerJoin('accounts as a', 'a.id', 'm.account_id')
      .select(['a.email', 'a.id'])
      .where('m.org_id', '=', second.orgId)
      .orderBy('a.email')
      .executeTakeFirstOrThrow();
    const api = client(fixture.app, first.readKey);
    // Exactly the answer for a learner who exists nowhere: nothing tells that one exists elsewhere.
    const nobody = { email: 'personne@nulle-part.fr', id: '00000000-0000-4000-8000-000000000000' };
    for (const resource of [...learningResources, 'users', 'summary']) {
      for (const query of [
        (l: typeof nobody) => `email=${encodeURIComponent(l.email)}`,
        (l: typeof nobody) => `user_id=${l.id}`,
        (l: typeof nobody) => `email=${encodeURIComponent(l.email)}&format=csv`,
      ]) {
        const response = await api.get(`/v1/${resource}?${query(other)}`);
        const reference = await api.get(`/v1/${resource}?${query(nobody)}`);
        expect(response.statusCode, `${resource} ${query(other)}`).toBe(404);
        expect(response.body.replace(other.email, nobody.email).replace(other.id, nobody.id)).toBe(reference.body);
      }
    }
  });
});
