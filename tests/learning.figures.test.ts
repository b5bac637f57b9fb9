import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expectContract } from './support/contract';
import { client, type Row, seededOrganisation, seededYear, seededYears } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp({ rateLimitPerMinute: 100_000 });

const byEmail = (rows: Row[]) => {
  const groups = new Map<string, Row[]>();
  for (const row of rows) groups.set(row.email as string, [...(groups.get(row.email as string) ?? []), row]);
  return (email: string) => groups.get(email) ?? [];
};

const sum = (rows: Row[], column: string) => rows.reduce((total, row) => total + (row[column] as number), 0);

/** What the learners row must say, recomputed from the detail resources of the same year (DECISIONS, "The figures agree"). */
function expectedFigures(email: string, detail: Record<string, (email: string) => Row[]>) {
  const logins = detail.logins!(email);
  const enrollments = detail.enrollments!(email);
  const progress = detail.progress!(email);
  const evaluations = detail.evaluations!(email);
  const attendance = detail.attendance!(email);
  const documents = detail.documents!(email);
  const surveys = detail.satisfaction!(email);
  const passed = evaluations.filter((row) => row.reussi === 'Oui');
  const latest = surveys.at(-1);
  return {
    connexions: logins.length,
    programmes_suivis: enrollments.length,
    programmes_completes: enrollments.filter((row) => row.complete === 'Oui').length,
    temps_cours_min: sum(progress, 'temps_min'),
    evaluations_reussies: passed.length,
    evaluations_total: evaluations.length,
    score_moyen: passed.length === 0 ? null : Math.round(sum(passed, 'score') / passed.length),
    seances_tutorat: attendance.length,
    seances_present: attendance.filter((row) => row.present === 'Oui').length,
    pif_emis: documents.filter((row) => row.type === 'PIF').length,
    attestations_emises: documents.filter((row) => row.type === 'Attestation').length,
    satisfaction_note: latest ? latest.note : null,
    nps: latest ? latest.nps : null,
    temps_tutorat_min: sum(attendance, 'temps_connecte_min'),
  };
}

/** The detail rows of every year, by resource and year. */
type Years = Map<number, Record<string, Row[]>>;

/**
 * The year slices agree with one another across years: an enrolment's row of year Y shows what its
 * lesson rows and certificate of the years up to Y say, and every programme a detail resource shows
 * in year Y is followed in Y.
 */
function expectYearsConsistent(years: Years) {
  const ordered = [...years.keys()].sort();
  for (const year of ordered) {
    const { enrollments, progress, documents, evaluations, attendance } = years.get(year)!;
    const followed = new Set(enrollments!.map((row) => `${row.email} ${row.programme_slug}`));
    expect(followed.size, `${year}: one enrollments row per learner and programme`).toBe(enrollments!.length);
    for (const row of [...progress!, ...documents!, ...evaluations!, ...attendance!.filter((a) => a.programme_slug !== null)]) {
      expect(
        followed.has(`${row.email} ${row.programme_slug}`),
        `${year}: ${row.email} shows ${row.programme_slug} but does not follow it`,
      ).toBe(true);
    }
    const upToYear = ordered.filter((other) => other <= year).map((other) => years.get(other)!);
    for (const enrolment of enrollments!) {
      const same = (row: Row) => row.email === enrolment.email && row.programme_slug === enrolment.programme_slug;
      // Lessons viewed by the end of Y: those shown viewed in a progress row of Y or before.
      const viewed = new Set(
        upToYear.flatMap((rows) =>
          rows.progress!.filter((row) => same(row) && row.vue === 'Oui').map((row) => `${row.module} ${row.lecon}`),
        ),
      );
      expect(enrolment.lecons_vues, `${year} ${enrolment.email} ${enrolment.programme_slug}`).toBe(viewed.size);
      for (const row of progress!.filter(same)) expect(row.pourcentage_programme).toBe(enrolment.pourcentage);
      // Complete by the end of Y: a certificate issued in Y or before, on that date.
      const certificate = upToYear.flatMap((rows) => rows.documents!.filter((row) => same(row) && row.type === 'Attestation'))[0];
      expect(enrolment.complete).toBe(certificate ? 'Oui' : 'Non');
      expect(enrolment.complete_le).toBe(certificate ? certificate.emis_le : null);
      // Dates as of the end of Y: never after it.
      for (const column of ['complete_le', 'derniere_activite_le', 'premiere_connexion_le', 'derniere_connexion_le']) {
        if (enrolment[column] !== null) expect((enrolment[column] as string) < `${year + 1}`, column).toBe(true);
      }
    }
    for (const row of progress!) expect((row.derniere_visite_le as string).startsWith(`${year}-`)).toBe(true);
  }
}

describe('the figures agree', () => {
  it('in every year of the data, every learners row equals what the detail resources give for that year, and summary equals users', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.integer({ min: 3, max: 12 }), async (seed, learners) => {
        const org = await seededOrganisation(fixture.db, { name: `Organisme ${++run}`, learners, seed });
        const api = client(fixture.app, org.readKey);
        const years: Years = new Map();
        for (const year of seededYears) {
          const query = `year=${year}`;
          const rows = await api.all('learners', query);
          // The members by the end of the year: everyone in the last year, fewer before.
          if (year === seededYear) expect(rows).toHaveLength(learners);
          else expect(rows.length).toBeLessThanOrEqual(learners);
          for (const row of rows) {
            expect(row.invite_le ?? row.inscrit_le, `${year} ${row.email as string}`).not.toBeNull();
            for (const date of [row.invite_le, row.inscrit_le]) if (date !== null) expect((date as string) < `${year + 1}`).toBe(true);
          }
          const detailRows = Object.fromEntries(
            await Promise.all(
              ['logins', 'enrollments', 'progress', 'evaluations', 'attendance', 'documents', 'satisfaction'].map(
                async (resource) => [resource, await api.all(resource, query)] as const,
              ),
            ),
          );
          years.set(year, detailRows);
          const detail = Object.fromEntries(Object.entries(detailRows).map(([resource, found]) => [resource, byEmail(found)]));
          for (const row of rows) {
            expect(row, `${year} ${row.email as string}`).toMatchObject(expectedFigures(row.email as string, detail));
            const parts = [row.temps_cours_min, row.temps_labia_min, row.temps_tutorat_min] as number[];
            expect(row.temps_actif_min).toBeGreaterThanOrEqual(Math.max(...parts));
            expect(row.temps_actif_min).toBeLessThanOrEqual(parts[0]! + parts[1]! + parts[2]!);
          }
          // One learner's own request gives their org-wide row.
          const one = rows[seed % rows.length]!;
          const single = await api.json(`/v1/learners?${query}&email=${encodeURIComponent(one.email as string)}`);
          expectContract('/learners', single);
          expect(single.data).toEqual([one]);
        }
        expectYearsConsistent(years);

        const users = await api.all('users');
        const summary = (await api.json('/v1/summary')).data;
        expect(summary.utilisateurs).toEqual({ total: users.length, actifs: users.filter((u) => u.statut === 'actif').length });
        for (const type of ['standard', 'tutorat'] as const) {
          // Each generated learner holds one licence, the one `users` shows; spares are available.
          expect(summary.licences[type].utilisees).toBe(users.filter((u) => u.licence_type === type).length);
          expect(summary.licences[type].total).toBe(summary.licences[type].utilisees + summary.licences[type].disponibles);
          expect(summary.licences[type].disponibles).toBeGreaterThan(0);
        }
      }),
      { numRuns: 25, seed: 20261124 },
    );
  }, 600_000);
});
