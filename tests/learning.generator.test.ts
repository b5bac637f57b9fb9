import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminFailure } from './support/admin';
import { createOrgWithKeys } from './support/factories';
import { client, seededOrganisation } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';
import { projectRoot } from './support/server-process';

const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
let org: Awaited<ReturnType<typeof seededOrganisation>>;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  org = await seededOrganisation(fixture.db, { name: 'Formations Horizon', learners: 150, seed: 3 });
  api = client(fixture.app, org.readKey);
}, 120_000);

const both = async (resource: string) => [...(await api.all(resource, 'year=2025')), ...(await api.all(resource, 'year=2026'))];
const count = async (query: ReturnType<typeof sql<{ n: number }>>) => (await query.execute(fixture.db)).rows[0]!.n;

describe('the generator', () => {
  it('gives the same data for the same seed, and other data for another', async () => {
    // Three organisations of one database: addresses already taken on the platform get a number,
    // so addresses are compared without it, and rows as a set (the order follows the addresses).
    const contents = async (name: string, seed: number) => {
      const seeded = await seededOrganisation(fixture.db, { name, learners: 12, seed });
      const fetch = client(fixture.app, seeded.readKey);
      const exports = [];
      for (const resource of ['learners', 'quiz-answers', 'logins', 'users', 'attendance']) {
        const { header, rows } = await fetch.csv(resource);
        exports.push([header, rows.map((cells) => cells.map((cell) => cell.replace(/^([^@\s]+?)\d*@/, '$1@')).join(',')).sort()]);
      }
      return exports;
    };
    const [once, again, other] = [
      await contents('Déterminisme A', 42),
      await contents('Déterminisme B', 42),
      await contents('Déterminisme C', 43),
    ];
    expect(again).toEqual(once);
    expect(other).not.toEqual(once);
  }, 120_000);

  it('makes members in every account and licence state, with spare licences', async () => {
    const users = await api.all('users');
    expect(new Set(users.map((u) => u.statut))).toEqual(new Set(['actif', 'invité', 'suspendu']));
    expect(new Set(users.map((u) => u.licence_statut))).toEqual(new Set(['attribuée', 'activée', 'révoquée']));
    expect(new Set(users.map((u) => u.licence_type))).toEqual(new Set(['standard', 'tutorat']));
    const summary = (await api.json('/v1/summary')).data;
    expect(summary.licences.standard.disponibles + summary.licences.tutorat.disponibles).toBeGreaterThan(0);
    // Invited learners have not logged in, and most have no name yet.
    const invited = new Set(users.filter((u) => u.statut === 'invité').map((u) => u.email));
    expect((await both('logins')).some((row) => invited.has(row.email as string))).toBe(false);
    expect(users.some((u) => u.statut === 'invité' && u.nom === null)).toBe(true);
    expect(users.every((u) => /^[a-z0-9.-]+@[a-z0-9.-]+\.[a-z]+$/.test(u.email as string))).toBe(true);
  });

  it('issues a certificate only at 100 % progress, the day the programme completes', async () => {
    const enrollments = await both('enrollments');
    expect(enrollments.some((row) => row.complete === 'Oui')).toBe(true);
    expect(enrollments.some((row) => row.complete === 'Non' && (row.pourcentage as number) > 0)).toBe(true);
    for (const row of enrollments) {
      expect(row.complete === 'Oui').toBe(row.pourcentage === 100);
      if (row.complete === 'Oui') expect(row.complete_le! >= row.derniere_activite_le!).toBe(true);
    }
    expect(
      await count(sql<{ n: number }>`select count(*)::int as n from documents d join programme_enrolments pe
      on pe.membership_id = d.membership_id and pe.programme_id = d.programme_id
      where d.type = 'Attestation' and d.org_id = ${org.orgId} and pe.lessons_viewed < (select count(*) from lessons l where l.programme_id = pe.programme_id)`),
    ).toBe(0);
  });

  it('records attendance only for sessions of programmes the learner follows, with tutoring time that fits', async () => {
    expect(
      await count(sql<{
        n: number;
      }>`select count(*)::int as n from tutoring_attendance ta join tutoring_sessions ts on ts.id = ta.session_id
      where ta.org_id = ${org.orgId} and not exists (select 1 from programme_enrolments pe where pe.membership_id = ta.membership_id and pe.programme_id = ts.programme_id)`),
    ).toBe(0);
    // A present learner's tutoring interval is exactly the connected time.
    expect(
      await count(sql<{ n: number }>`select count(*)::int as n from tutoring_attendance ta
      where ta.org_id = ${org.orgId} and ta.present and ta.connected_minutes <> coalesce((select sum(extract(epoch from ai.ended_at - ai.started_at) / 60)
        from activity_intervals ai where ai.attendance_id = ta.id), 0)`),
    ).toBe(0);
    const attendance = await both('attendance');
    expect(attendance.some((row) => row.present === 'Non' && row.temps_connecte_min === 0)).toBe(true);
  });

  it('has overlapping activity, multi-attempt quizzes and legacy tutoring ratings', async () => {
    // A lab opened during a course: the active time counts the overlap once.
    const learners = await api.all('learners');
    expect(
      learners.some(
        (row) =>
          (row.temps_actif_min as number) <
          (row.temps_cours_min as number) + (row.temps_labia_min as number) + (row.temps_tutorat_min as number),
      ),
    ).toBe(true);
    const evaluations = await both('evaluations');
    expect(evaluations.some((row) => (row.tentative as number) >= 2)).toBe(true);
    expect(evaluations.some((row) => row.reussi === 'Non')).toBe(true);
    const ratings = await both('tutoring-ratings');
    expect(ratings.some((row) => row.note_seance === null)).toBe(true);
    expect(ratings.some((row) => row.note_seance !== null)).toBe(true);
    const answers = await api.all('quiz-answers');
    expect(answers.every((row) => (row.options as string).split('|').includes(row.reponse_choisie as string))).toBe(true);
    expect(answers.every((row) => (row.correct === 'Oui') === (row.reponse_choisie === row.bonne_reponse))).toBe(true);
  });

  it('tells the year-boundary stories on purpose: time across midnight on 31 December, enrolments over two and three years, January certificates, a dormant year', async () => {
    const years = [2024, 2025, 2026];
    const rows = Object.fromEntries(
      await Promise.all(
        years.map(
          async (year) =>
            [
              year,
              {
                enrollments: await api.all('enrollments', `year=${year}`),
                progress: await api.all('progress', `year=${year}`),
                documents: await api.all('documents', `year=${year}`),
                logins: await api.all('logins', `year=${year}`),
              },
            ] as const,
        ),
      ),
    );
    // Lesson, AI-lab and tutoring time across each New Year of the data.
    for (const newYear of [2025, 2026]) {
      for (const kind of ['cours', 'labia', 'tutorat']) {
        expect(
          await count(sql<{ n: number }>`select count(*)::int as n from activity_intervals where org_id = ${org.orgId} and kind = ${kind}
          and paris_year(started_at) = ${newYear - 1} and paris_year(ended_at) = ${newYear}`),
          `${kind} ${newYear}`,
        ).toBeGreaterThan(0);
      }
      // The end of a visit opened the year before: a row of its own on 1 January, without a visit.
      expect(
        rows[newYear]!.progress.some(
          (row) => row.visites === 0 && (row.temps_min as number) > 0 && row.derniere_visite_le === `${newYear}-01-01`,
        ),
        String(newYear),
      ).toBe(true);
    }
    // Enrolments with a row in two and in three calendar years.
    const yearsOf = new Map<string, number[]>();
    for (const year of years) {
      for (const row of rows[year]!.enrollments) {
        const key = `${row.email} ${row.programme_slug}`;
        yearsOf.set(key, [...(yearsOf.get(key) ?? []), year]);
      }
    }
    expect([...yearsOf.values()].some((found) => found.length === 3)).toBe(true);
    expect([...yearsOf.values()].some((found) => found.length === 2)).toBe(true);
    // A certificate issued in January for a programme followed mostly the year before.
    const minutes = (year: number, email: unknown, slug: unknown) =>
      rows[year]!.progress.filter((row) => row.email === email && row.programme_slug === slug).reduce(
        (sum, row) => sum + (row.temps_min as number),
        0,
      );
    expect(
      years
        .slice(1)
        .some((year) =>
          rows[year]!.documents.some(
            (row) =>
              row.type === 'Attestation' &&
              (row.emis_le as string).startsWith(`${year}-01-`) &&
              minutes(year - 1, row.email, row.programme_slug) > minutes(year, row.email, row.programme_slug),
          ),
        ),
    ).toBe(true);
    // A learner active in the first and last years, with nothing at all in between.
    const activeIn = (year: number) => new Set(rows[year]!.logins.map((row) => row.email));
    const dormant = [...activeIn(2024)].filter((email) => activeIn(2026).has(email) && !activeIn(2025).has(email));
    expect(dormant.length).toBeGreaterThan(0);
    const [quiet] = await api.all('learners', `year=2025&email=${encodeURIComponent(dormant[0] as string)}`);
    expect(quiet).toMatchObject({ connexions: 0, temps_actif_min: 0, programmes_suivis: 0, evaluations_total: 0, seances_tutorat: 0 });
  });

  it('keeps every date before "now"', async () => {
    for (const table of ['logins', 'activity_intervals']) {
      expect(
        await count(
          sql<{
            n: number;
          }>`select count(*)::int as n from ${sql.table(table)} where org_id = ${org.orgId} and started_at >= '2026-11-22T09:00:00Z'`,
        ),
      ).toBe(0);
    }
  });
});

describe('npm run admin -- seed', () => {
  it('seeds an organisation with a progress bar on stderr, and refuses to seed it twice', async () => {
    const target = await createOrgWithKeys(fixture.db, { name: 'Par la commande' });
    const args = [
      '--import',
      'tsx',
      'scripts/admin.ts',
      'seed',
      '--org',
      target.orgId,
      '--learners',
      '6',
      '--seed',
      '9',
      '--year',
      '2025',
      '--json',
    ];
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: fixture.url, LOG_LEVEL: 'silent' },
    });
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ org: target.orgId, learners: 6, seed: 9, from: '2023-01-01', to: '2025-12-31' });
    expect(result.total_rows).toBeGreaterThan(100);
    expect(stderr).toMatch(/Génération \[#+\] 100 % 6\/6/);
    const twice = await adminFailure(fixture.url, ['seed', '--org', target.orgId, '--learners', '6']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/déjà été peuplée/);
  }, 60_000);
});
