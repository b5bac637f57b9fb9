import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp } from './support/app';
import { expectContract } from './support/contract';
import { createTestDatabase, type TestDatabase } from './support/database';
import { client, type Row, seededOrganisation } from './support/learning-factories';

let database: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  database = await createTestDatabase();
  app = await buildTestApp(database.db, { rateLimitPerMinute: 100_000 });
});
afterAll(async () => {
  await app.close();
  await database.drop();
});

const byEmail = (rows: Row[]) => {
  const groups = new Map<string, Row[]>();
  for (const row of rows) groups.set(row.email as string, [...(groups.get(row.email as string) ?? []), row]);
  return (email: string) => groups.get(email) ?? [];
};

/** What the learners row must say, recomputed from the detail resources of the same year. */
function expectedFigures(email: string, detail: Record<string, (email: string) => Row[]>) {
  const logins = detail.logins!(email);
  const enrollments = detail.enrollments!(email);
  const evaluations = detail.evaluations!(email);
  const attendance = detail.attendance!(email);
  const documents = detail.documents!(email);
  const surveys = detail.satisfaction!(email);
  const passed = evaluations.filter((row) => row.reussi === 'Oui');
  const latest = surveys.at(-1);
  return {
    connexions: logins.length,
    temps_tutorat_min: attendance.reduce((sum, row) => sum + (row.temps_connecte_min as number), 0),
    programmes_suivis: enrollments.length,
    programmes_completes: enrollments.filter((row) => row.complete === 'Oui').length,
    evaluations_reussies: passed.length,
    evaluations_total: evaluations.length,
    score_moyen: passed.length === 0 ? null : Math.round(passed.reduce((sum, row) => sum + (row.score as number), 0) / passed.length),
    seances_tutorat: attendance.length,
    seances_present: attendance.filter((row) => row.present === 'Oui').length,
    pif_emis: documents.filter((row) => row.type === 'PIF').length,
    attestations_emises: documents.filter((row) => row.type === 'Attestation').length,
    satisfaction_note: latest ? latest.note : null,
    nps: latest ? latest.nps : null,
  };
}

describe('the figures agree', () => {
  it('every learners row equals what the detail resources give for the same year, and summary equals users', async () => {
    let run = 0;
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 2 ** 31 - 1 }),
      fc.integer({ min: 2, max: 12 }),
      fc.constantFrom(2025, 2026),
      async (seed, learners, year) => {
        const org = await seededOrganisation(database.db, { name: `Organisme ${++run}`, learners, seed });
        const api = client(app, org.readKey);
        const query = `year=${year}`;
        const rows = await api.all('learners', query);
        expect(rows).toHaveLength(learners);
        const detail = Object.fromEntries(await Promise.all(['logins', 'enrollments', 'evaluations', 'attendance', 'documents', 'satisfaction']
          .map(async (resource) => [resource, byEmail(await api.all(resource, query))] as const)));
        for (const row of rows) {
          expect(row, row.email as string).toMatchObject(expectedFigures(row.email as string, detail));
          const parts = [row.temps_cours_min, row.temps_labia_min, row.temps_tutorat_min] as number[];
          expect(row.temps_actif_min).toBeGreaterThanOrEqual(Math.max(...parts));
          expect(row.temps_actif_min).toBeLessThanOrEqual(parts[0]! + parts[1]! + parts[2]!);
        }
        // One learner's own request gives their org-wide row.
        const one = rows[seed % rows.length]!;
        const single = await api.json(`/v1/learners?${query}&email=${encodeURIComponent(one.email as string)}`);
        expectContract('/learners', single);
        expect(single.data).toEqual([one]);

        const users = await api.all('users');
        const summary = (await api.json('/v1/summary')).data;
        expect(summary.utilisateurs).toEqual({ total: users.length, actifs: users.filter((u) => u.statut === 'actif').length });
        for (const type of ['standard', 'tutorat'] as const) {
          // Each generated learner holds one licence, the one `users` shows; spares are available.
          expect(summary.licences[type].utilisees).toBe(users.filter((u) => u.licence_type === type).length);
          expect(summary.licences[type].total).toBe(summary.licences[type].utilisees + summary.licences[type].disponibles);
          expect(summary.licences[type].disponibles).toBeGreaterThan(0);
        }
      },
    ), { numRuns: 25 });
  }, 300_000);
});
