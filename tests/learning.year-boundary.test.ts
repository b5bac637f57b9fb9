import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { completeQuiz, issueCertificate, openLesson, recordLogin, submitSatisfaction } from '../db/activity';
import { extractPdfText } from './activity-report.pdf-text';
import { admin } from './support/admin';
import { bearer } from './support/app';
import { addLearner, createOrgWithKeys } from './support/factories';
import { client, type Row, seededOrganisation, seededYear } from './support/learning-factories';
import { createProgramme, type FixtureLesson } from './support/learning-fixture';
import { useTestApp } from './support/lifecycle';
import { expectReportEqualsResources, type FetchAll } from './support/report-reading';

// A year is a period (docs/decisions.md#year-period): the rows of year Y show Y, and the state reached by 31 December
// of Y. A learner built through the live write paths straddles New Year in every way: a lesson
// visit, an AI-lab session, a tutoring session and a login across midnight, an enrolment over three
// calendar years, a certificate issued in January for a programme followed the year before; another
// learner is dormant for a whole year. Then a seeded organisation shows that a past year does not
// move when new activity is recorded.

const fixture = useTestApp({ rateLimitPerMinute: 100_000 });

/** An instant of Paris winter time (UTC+1), 'YYYY-MM-DD HH:MM'. */
const paris = (text: string) => new Date(`${text.replace(' ', 'T')}:00+01:00`);

function fetcher(key: string): FetchAll {
  const api = client(fixture.app, key);
  return async <Row>(resource: string, query: string) => (await api.all(resource, query)) as Row[];
}

async function reportLines(key: string, query: string): Promise<string[]> {
  const response = await fixture.app.inject({ method: 'GET', url: `/v1/activity-report?${query}`, headers: bearer(key) });
  expect(response.statusCode, response.body).toBe(200);
  return (await extractPdfText(response.rawPayload)).lines;
}

/** A tutoring workshop of the programme and the learner's presence at it, with its tutoring interval. */
async function attendWorkshop(
  orgId: string,
  membershipId: string,
  programmeId: string,
  workshop: { startsAt: string; planned: number; from: string; to: string },
) {
  const { db } = fixture;
  const session = await db
    .insertInto('tutoring_sessions')
    .values({
      org_id: orgId,
      programme_id: programmeId,
      title: 'Atelier tutoré — Veillée de fin d’année',
      starts_at: paris(workshop.startsAt),
      planned_minutes: workshop.planned,
      trainer_name: 'Nadia Benali',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const connected = (paris(workshop.to).getTime() - paris(workshop.from).getTime()) / 60_000;
  const attendance = await db
    .insertInto('tutoring_attendance')
    .values({
      org_id: orgId,
      session_id: session.id,
      membership_id: membershipId,
      present: true,
      connected_minutes: connected,
      signed_by_learner: true,
      signed_by_trainer: true,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('activity_intervals')
    .values({
      org_id: orgId,
      membership_id: membershipId,
      kind: 'tutorat',
      started_at: paris(workshop.from),
      ended_at: paris(workshop.to),
      programme_id: programmeId,
      lesson_id: null,
      attendance_id: attendance.id,
    })
    .execute();
}

describe('a learner across New Year', () => {
  let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
  let programme: Awaited<ReturnType<typeof createProgramme>>;
  const email = 'claire.nouvel-an@exemple.fr';
  const dormantEmail = 'bruno.dormeur@exemple.fr';

  beforeAll(async () => {
    const { db } = fixture;
    org = await createOrgWithKeys(db, { name: 'Formations Saint-Sylvestre' });
    programme = await createProgramme(db, org.orgId);
    const [references, quiz, pivot] = programme.lessons as [FixtureLesson, FixtureLesson, FixtureLesson];
    const { membershipId } = await addLearner(db, org.orgId, { email, name: 'Claire Nouvel-An', at: '2024-12-10 09:00' });
    const ids = { orgId: org.orgId, membershipId };
    await db
      .insertInto('programme_enrolments')
      .values({
        org_id: org.orgId,
        membership_id: membershipId,
        programme_id: programme.programmeId,
        enrolled_at: paris('2024-12-10 09:30'),
      })
      .execute();
    await db
      .insertInto('documents')
      .values({
        org_id: org.orgId,
        membership_id: membershipId,
        programme_id: programme.programmeId,
        type: 'PIF',
        issued_at: paris('2024-12-11 10:00'),
        hours: 1.5,
        completion_score: null,
      })
      .execute();

    // 2024: a first lesson, then New Year's Eve: login, workshop, AI lab and a lesson past midnight, the quiz after it.
    await recordLogin(db, {
      ...ids,
      startedAt: paris('2024-12-10 10:00'),
      endedAt: paris('2024-12-10 10:30'),
      ip: '192.0.2.10',
      userAgent: null,
    });
    await openLesson(db, { ...ids, lessonId: references.id, openedAt: paris('2024-12-10 10:05'), activeSeconds: 20 * 60 });
    await recordLogin(db, {
      ...ids,
      startedAt: paris('2024-12-31 22:55'),
      endedAt: paris('2025-01-01 00:40'),
      ip: '192.0.2.10',
      userAgent: null,
    });
    await attendWorkshop(org.orgId, membershipId, programme.programmeId, {
      startsAt: '2024-12-31 23:00',
      planned: 90,
      from: '2024-12-31 23:05',
      to: '2025-01-01 00:25',
    });
    await db
      .insertInto('activity_intervals')
      .values({
        org_id: org.orgId,
        membership_id: membershipId,
        kind: 'labia',
        started_at: paris('2024-12-31 23:45'),
        ended_at: paris('2025-01-01 00:15'),
        programme_id: programme.programmeId,
        lesson_id: null,
        attendance_id: null,
      })
      .execute();
    await openLesson(db, { ...ids, lessonId: quiz.id, openedAt: paris('2024-12-31 23:50'), activeSeconds: 30 * 60 });
    await completeQuiz(db, {
      ...ids,
      lessonId: quiz.id,
      completedAt: paris('2025-01-01 00:25'),
      answers: quiz.questions.map((question, i) => ({
        questionId: question.id,
        chosenOption: question.correct,
        answeredAt: paris(`2025-01-01 00:2${i + 1}`),
      })),
    });
    // 2025: the quiz lesson again in March, the last lesson from New Year's Eve into 2026.
    await recordLogin(db, {
      ...ids,
      startedAt: paris('2025-03-04 10:00'),
      endedAt: paris('2025-03-04 10:30'),
      ip: '192.0.2.10',
      userAgent: null,
    });
    await openLesson(db, { ...ids, lessonId: quiz.id, openedAt: paris('2025-03-04 10:05'), activeSeconds: 15 * 60 });
    await recordLogin(db, {
      ...ids,
      startedAt: paris('2025-12-31 23:35'),
      endedAt: paris('2026-01-01 00:30'),
      ip: '192.0.2.10',
      userAgent: null,
    });
    await openLesson(db, { ...ids, lessonId: pivot.id, openedAt: paris('2025-12-31 23:40'), activeSeconds: 40 * 60 });
    // 2026: the certificate in January.
    await issueCertificate(db, { ...ids, programmeId: programme.programmeId, issuedAt: paris('2026-01-05 10:00') });
    await submitSatisfaction(db, {
      ...ids,
      programmeId: programme.programmeId,
      rating: 5,
      nps: 9,
      verbatim: null,
      answeredAt: paris('2026-01-06 09:00'),
    });

    // Active in 2024, nothing in 2025, active again in 2026 in another programme.
    const other = await createProgramme(db, org.orgId, 'word-avance', 'Word avancé');
    const dormant = await addLearner(db, org.orgId, { email: dormantEmail, name: 'Bruno Dormeur', at: '2024-02-05 09:00' });
    const dormantIds = { orgId: org.orgId, membershipId: dormant.membershipId };
    await db
      .insertInto('programme_enrolments')
      .values({
        org_id: org.orgId,
        membership_id: dormant.membershipId,
        programme_id: programme.programmeId,
        enrolled_at: paris('2024-02-05 09:00'),
      })
      .execute();
    await recordLogin(db, {
      ...dormantIds,
      startedAt: paris('2024-02-05 10:00'),
      endedAt: paris('2024-02-05 10:30'),
      ip: '192.0.2.11',
      userAgent: null,
    });
    await openLesson(db, { ...dormantIds, lessonId: references.id, openedAt: paris('2024-02-05 10:05'), activeSeconds: 12 * 60 });
    await db
      .insertInto('programme_enrolments')
      .values({
        org_id: org.orgId,
        membership_id: dormant.membershipId,
        programme_id: other.programmeId,
        enrolled_at: paris('2026-02-02 09:00'),
      })
      .execute();
    await recordLogin(db, {
      ...dormantIds,
      startedAt: paris('2026-02-02 10:00'),
      endedAt: paris('2026-02-02 10:30'),
      ip: '192.0.2.11',
      userAgent: null,
    });
    await openLesson(db, { ...dormantIds, lessonId: other.lessons[0]!.id, openedAt: paris('2026-02-02 10:05'), activeSeconds: 9 * 60 });
  });

  const rowsOf = (resource: string, year: number, who = email) =>
    client(fixture.app, org.readKey).all(resource, `year=${year}&email=${encodeURIComponent(who)}`);

  it('files each year’s share of the time under that year, cut at midnight on 31 December', async () => {
    expect(
      (await rowsOf('progress', 2024)).map(({ lecon, vue, visites, temps_min, derniere_visite_le, pourcentage_programme }) => ({
        lecon,
        vue,
        visites,
        temps_min,
        derniere_visite_le,
        pourcentage_programme,
      })),
    ).toEqual([
      { lecon: 'Les références', vue: 'Oui', visites: 1, temps_min: 20, derniere_visite_le: '2024-12-10', pourcentage_programme: 66 },
      { lecon: 'Quiz — formules', vue: 'Oui', visites: 1, temps_min: 10, derniere_visite_le: '2024-12-31', pourcentage_programme: 66 },
    ]);
    // The New Year's visit counts in 2024, where it was opened; its 20 minutes after midnight in 2025.
    expect(
      (await rowsOf('progress', 2025)).map(({ lecon, vue, visites, temps_min, derniere_visite_le, pourcentage_programme }) => ({
        lecon,
        vue,
        visites,
        temps_min,
        derniere_visite_le,
        pourcentage_programme,
      })),
    ).toEqual([
      {
        lecon: 'Quiz — formules',
        vue: 'Oui',
        visites: 1,
        temps_min: 20 + 15,
        derniere_visite_le: '2025-03-04',
        pourcentage_programme: 100,
      },
      { lecon: 'Créer un TCD', vue: 'Oui', visites: 1, temps_min: 20, derniere_visite_le: '2025-12-31', pourcentage_programme: 100 },
    ]);
    // A year that only holds the end of a visit shows it on 1 January, with no visit of its own.
    expect(
      (await rowsOf('progress', 2026)).map(({ lecon, visites, temps_min, derniere_visite_le }) => ({
        lecon,
        visites,
        temps_min,
        derniere_visite_le,
      })),
    ).toEqual([{ lecon: 'Créer un TCD', visites: 0, temps_min: 20, derniere_visite_le: '2026-01-01' }]);
  });

  it('has an enrollments row in each of the three years, each as it stood on 31 December', async () => {
    const columns = (rows: Row[]) => rows.map(({ apprenant: _name, email: _email, programme: _title, ...rest }) => rest);
    expect(columns(await rowsOf('enrollments', 2024))).toEqual([
      {
        programme_slug: programme.slug,
        pourcentage: 66,
        lecons_vues: 2,
        lecons_total: 3,
        complete: 'Non',
        complete_le: null,
        derniere_activite_le: '2024-12-31',
        premiere_connexion_le: '2024-12-10 10:05',
        derniere_connexion_le: '2024-12-31 23:50',
      },
    ]);
    expect(columns(await rowsOf('enrollments', 2025))).toEqual([
      {
        programme_slug: programme.slug,
        pourcentage: 100,
        lecons_vues: 3,
        lecons_total: 3,
        complete: 'Non',
        complete_le: null,
        derniere_activite_le: '2025-12-31',
        premiere_connexion_le: '2024-12-10 10:05',
        derniere_connexion_le: '2025-12-31 23:40',
      },
    ]);
    // Active in 2026 by the certificate alone; the last visit opened by then is still the one of New Year's Eve.
    expect(columns(await rowsOf('enrollments', 2026))).toEqual([
      {
        programme_slug: programme.slug,
        pourcentage: 100,
        lecons_vues: 3,
        lecons_total: 3,
        complete: 'Oui',
        complete_le: '2026-01-05',
        derniere_activite_le: '2026-01-05',
        premiere_connexion_le: '2024-12-10 10:05',
        derniere_connexion_le: '2025-12-31 23:40',
      },
    ]);
  });

  it('counts logins, attempts and the tutoring session wholly in the year they started, and agrees in the learners rows', async () => {
    const figures = async (year: number) => (await rowsOf('learners', year))[0]!;
    expect(await figures(2024)).toMatchObject({
      connexions: 2,
      temps_cours_min: 30,
      temps_labia_min: 15,
      temps_tutorat_min: 80,
      // 20 minutes on 10 December; on New Year's Eve the workshop (23:05 to 00:25, whole) covers the lab and the lesson.
      temps_actif_min: 20 + 80,
      programmes_suivis: 1,
      programmes_completes: 0,
      evaluations_total: 0,
      seances_tutorat: 1,
      seances_present: 1,
      pif_emis: 1,
      attestations_emises: 0,
    });
    expect(await figures(2025)).toMatchObject({
      connexions: 2,
      temps_cours_min: 55,
      temps_labia_min: 15,
      temps_tutorat_min: 0,
      // 00:00 to 00:20 on 1 January (lesson and lab), 15 minutes in March, 23:40 to midnight on 31 December.
      temps_actif_min: 20 + 15 + 20,
      programmes_suivis: 1,
      programmes_completes: 0,
      evaluations_total: 1,
      evaluations_reussies: 1,
      score_moyen: 100,
      seances_tutorat: 0,
      pif_emis: 0,
    });
    expect(await figures(2026)).toMatchObject({
      connexions: 0,
      temps_cours_min: 20,
      temps_labia_min: 0,
      temps_tutorat_min: 0,
      temps_actif_min: 20,
      programmes_suivis: 1,
      programmes_completes: 1,
      attestations_emises: 1,
      satisfaction_note: 5,
      nps: 9,
    });
    expect((await rowsOf('attendance', 2024)).map((row) => row.temps_connecte_min)).toEqual([80]);
    expect(await rowsOf('attendance', 2025)).toEqual([]);
    expect((await rowsOf('evaluations', 2025)).map((row) => row.date)).toEqual(['2025-01-01']);
    expect((await rowsOf('logins', 2024)).map((row) => row.fin)).toEqual(['2024-12-10 10:30', '2025-01-01 00:40']);
  });

  it('shows nothing for the year a learner was dormant, and each active year on its own', async () => {
    expect(await rowsOf('learners', 2025, dormantEmail)).toMatchObject([
      { connexions: 0, temps_actif_min: 0, temps_cours_min: 0, programmes_suivis: 0 },
    ]);
    for (const resource of ['enrollments', 'progress', 'logins']) expect(await rowsOf(resource, 2025, dormantEmail), resource).toEqual([]);
    expect((await rowsOf('enrollments', 2024, dormantEmail)).map((row) => row.programme_slug)).toEqual([programme.slug]);
    expect((await rowsOf('enrollments', 2026, dormantEmail)).map((row) => row.programme_slug)).toEqual(['word-avance']);
    expect(await rowsOf('learners', 2026, dormantEmail)).toMatchObject([{ connexions: 1, temps_cours_min: 9, programmes_suivis: 1 }]);
  });

  it('finds the new year’s rows with updated_since, on their natural dates', async () => {
    const api = client(fixture.app, org.readKey);
    const since = async (resource: string, day: string) =>
      (await api.all(resource, `year=2026&updated_since=${day}&email=${encodeURIComponent(email)}`)).length;
    expect(await since('enrollments', '2026-01-05')).toBe(1);
    expect(await since('enrollments', '2026-01-06')).toBe(0);
    expect(await since('progress', '2026-01-01')).toBe(1);
    expect(await since('progress', '2026-01-02')).toBe(0);
    // Organisation-wide, the rows of the year in natural-date order.
    expect((await api.all('enrollments', 'year=2025')).map((row) => row.derniere_activite_le)).toEqual(['2025-12-31']);
  });

  it('gives each year’s report the programmes followed that year, their state on 31 December and the same minutes as the JSON', {
    timeout: 60_000,
  }, async () => {
    const fetchAll = fetcher(org.readKey);
    for (const year of [2024, 2025, 2026]) {
      const query = `email=${encodeURIComponent(email)}&year=${year}`;
      const lines = await reportLines(org.readKey, query);
      await expectReportEqualsResources(fetchAll, query, lines);
      expect(lines.some((line) => line.includes('Programmes suivis 1'))).toBe(true);
    }
    const lines2025 = await reportLines(org.readKey, `email=${encodeURIComponent(email)}&year=2025&programme=${programme.slug}`);
    expect(lines2025).toContain(`Programme ${programme.title} (${programme.slug})`);
    expect(lines2025.some((line) => line.includes('100 %') && line.includes('3/3') && line.includes('Non'))).toBe(true);
    expect(lines2025).toContainEqual(expect.stringMatching(/^Total : 2 leçons, 2 visites, temps actif 55 min/));
    await expectReportEqualsResources(fetchAll, `email=${encodeURIComponent(email)}&year=2025&programme=${programme.slug}`, lines2025);
  });
});

describe('a past year', () => {
  it('does not move when new activity is recorded for the same learners, live or simulated', { timeout: 240_000 }, async () => {
    const { db } = fixture;
    const org = await seededOrganisation(db, { name: 'Formations Archives', learners: 40, seed: 17 });
    const api = client(fixture.app, org.readKey);
    const past = seededYear - 1;
    // Learners active in both years: the story learners among them.
    const learnersOfBoth = (await api.all('enrollments', `year=${seededYear}`))
      .map((row) => row.email as string)
      .filter((address, i, all) => all.indexOf(address) === i);
    const watched = (await api.all('enrollments', `year=${past}`))
      .map((row) => row.email as string)
      .filter((address) => learnersOfBoth.includes(address))
      .slice(0, 4);
    expect(watched.length).toBeGreaterThan(0);
    const snapshot = async () => ({
      rows: Object.fromEntries(
        await Promise.all(
          ['enrollments', 'progress', 'learners', 'evaluations', 'documents'].map(async (resource) => [
            resource,
            await api.all(resource, `year=${past}`),
          ]),
        ),
      ),
      // The report's text, but for its generation time.
      reports: await Promise.all(
        watched.map(async (address) =>
          (await reportLines(org.readKey, `email=${encodeURIComponent(address)}&year=${past}`)).filter(
            (line) => !line.startsWith('Généré le'),
          ),
        ),
      ),
      current: await api.all('progress', `year=${seededYear}`),
    });
    const before = await snapshot();

    // New activity through the live write paths, after the seeded data, for the watched learners.
    const rows = await sql<{ membership_id: string; programme_id: string; lesson_id: string; has_quiz: boolean }>`
      select distinct on (m.id) m.id as membership_id, pe.programme_id, l.id as lesson_id, l.has_quiz
      from memberships m join accounts a on a.id = m.account_id
      join programme_enrolments pe on pe.membership_id = m.id
      join lessons l on l.programme_id = pe.programme_id
      where m.org_id = ${org.orgId} and a.email = any(${watched}::text[])
      order by m.id, l.has_quiz desc, l.id`.execute(db);
    let minute = 0;
    for (const row of rows.rows) {
      const at = (offset: number) => new Date(Date.UTC(2026, 10, 22, 12, minute + offset));
      const ids = { orgId: org.orgId, membershipId: row.membership_id };
      await recordLogin(db, { ...ids, startedAt: at(0), endedAt: at(30), ip: '198.51.100.7', userAgent: null });
      await openLesson(db, { ...ids, lessonId: row.lesson_id, openedAt: at(1), activeSeconds: 600 });
      if (row.has_quiz) {
        const questions = await db
          .selectFrom('quiz_questions')
          .select(['id', 'correct_option'])
          .where('lesson_id', '=', row.lesson_id)
          .execute();
        await completeQuiz(db, {
          ...ids,
          lessonId: row.lesson_id,
          completedAt: at(12),
          answers: questions.map((q) => ({ questionId: q.id, chosenOption: q.correct_option, answeredAt: at(11) })),
        });
      }
      await issueCertificate(db, { ...ids, programmeId: row.programme_id, issuedAt: at(20) });
      minute += 60;
    }
    // And learner activity played by the operator command, for everyone.
    const simulated = await admin(fixture.url, ['simulate', '--org', org.orgId, '--events', '40', '--rate', '1000']);
    expect(simulated.events).toBeGreaterThan(0);

    const after = await snapshot();
    expect(after.rows).toEqual(before.rows);
    expect(after.reports).toEqual(before.reports);
    // The current year did move.
    expect(after.current).not.toEqual(before.current);
  });
});
