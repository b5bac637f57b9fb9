import { expect } from 'vitest';
import type { components } from '../../codegen/openapi';
import { normalise } from '../activity-report.pdf-text';

// Reading an activity report back: the French spelling of the wire values, and the check that
// every section of a report holds the JSON resources' rows of the same query, in order.

type Schemas = components['schemas'];

/** Every row of a resource for a query, through the real server. */
export type FetchAll = <Row>(resource: string, query: string) => Promise<Row[]>;

// The French spelling of wire values, written here independently of the builder's own helpers.
export const int = (value: number) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
export const day = (date: string | null) => (date === null ? '—' : date.split('-').reverse().join('/'));
export const dayTime = (dateTime: string | null) => (dateTime === null ? '—' : `${day(dateTime.slice(0, 10))} ${dateTime.slice(11)}`);
export const minutes = (value: number) => `${int(value)} min`;
export const outOf = (value: number | null, scale: number) => (value === null ? '—' : `${value}/${scale}`);
/** A free-text cell may wrap: its first line holds at least its first words. */
export const opening = (text: string | null, words = 2) => (text === null ? '—' : normalise(text).split(' ').slice(0, words).join(' '));

/**
 * Each expected row is one line of the PDF holding its cells in order, the rows in the resource's
 * order, each on a line of its own: so the PDF has every row, with its figures, and no row twice.
 */
export function expectRows(lines: string[], rows: string[][], what: string) {
  let cursor = 0;
  for (const cells of rows) {
    const found = lines.findIndex((line, index) => {
      if (index < cursor) return false;
      let from = 0;
      for (const cell of cells) {
        const at = line.indexOf(cell, from);
        if (at < 0) return false;
        from = at + cell.length;
      }
      return true;
    });
    expect(found, `${what} : aucune ligne du PDF après la ligne ${cursor} ne contient ${JSON.stringify(cells)}`).toBeGreaterThanOrEqual(0);
    cursor = found + 1;
  }
}

export function expectSummary(lines: string[], row: Schemas['LearnerRow']) {
  const pairs: [string, string][] = [
    ['Connexions', int(row.connexions)],
    ['Temps actif total (dédoublonné)', minutes(row.temps_actif_min)],
    ['Temps sur les cours', minutes(row.temps_cours_min)],
    ['Temps au lab IA', minutes(row.temps_labia_min)],
    ['Temps en tutorat', minutes(row.temps_tutorat_min)],
    ['Programmes suivis', int(row.programmes_suivis)],
    ['Programmes complétés', int(row.programmes_completes)],
    ['Évaluations tentées', int(row.evaluations_total)],
    ['Évaluations réussies', int(row.evaluations_reussies)],
    ['Score moyen (réussies)', outOf(row.score_moyen, 100)],
    ['Séances de tutorat', int(row.seances_tutorat)],
    ['Séances avec présence validée', int(row.seances_present)],
    ['PIF émis', int(row.pif_emis)],
    ['Attestations émises', int(row.attestations_emises)],
    ['Satisfaction (dernière enquête)', outOf(row.satisfaction_note, 5)],
    ['NPS (dernière enquête)', outOf(row.nps, 10)],
  ];
  for (const [label, value] of pairs) {
    expect(
      lines.some((line) => line.includes(`${label} ${value}`)),
      `${label} ${value}`,
    ).toBe(true);
  }
  expect(lines).toContain(`Invité le ${day(row.invite_le)}`);
  expect(lines).toContain(`Inscrit le ${day(row.inscrit_le)}`);
}

/** Compares every section of a report with the JSON resources of the same query. */
export async function expectReportEqualsResources(fetchAll: FetchAll, query: string, lines: string[]) {
  const [learner] = await fetchAll<Schemas['LearnerRow']>('learners', query);
  expectSummary(lines, learner!);

  const enrollments = await fetchAll<Schemas['EnrollmentRow']>('enrollments', query);
  expectRows(
    lines,
    enrollments.map((row) => [
      opening(row.programme),
      `${row.pourcentage} %`,
      `${row.lecons_vues}/${row.lecons_total}`,
      row.complete,
      day(row.complete_le),
      dayTime(row.premiere_connexion_le),
      dayTime(row.derniere_connexion_le),
    ]),
    'enrollments',
  );

  const logins = await fetchAll<Schemas['LoginRow']>('logins', query);
  expectRows(
    lines,
    logins.map((row) => [
      dayTime(row.debut),
      row.fin === null ? 'en cours' : dayTime(row.fin),
      row.duree_min === null ? '—' : minutes(row.duree_min),
      row.ip,
    ]),
    'logins',
  );
  if (logins.length > 0) {
    const total = logins.reduce((sum, row) => sum + (row.duree_min ?? 0), 0);
    expect(lines).toContainEqual(
      expect.stringMatching(new RegExp(`^Total : ${int(logins.length)} connexions, durée cumulée ${minutes(total)}`)),
    );
  }

  const progress = await fetchAll<Schemas['ProgressRow']>('progress', query);
  const perModule = new Map<string, { module: string; minutes: number }>();
  for (const row of progress) {
    const entry = perModule.get(`${row.programme_slug}/${row.module}`) ?? { module: row.module, minutes: 0 };
    entry.minutes += row.temps_min;
    perModule.set(`${row.programme_slug}/${row.module}`, entry);
  }
  // The chart (module and minutes), then each programme's and module's heading, then its lessons.
  expectRows(
    lines,
    [...perModule.values()].map((entry) => [opening(entry.module, 3), minutes(entry.minutes)]),
    'chart',
  );
  expectRows(
    lines,
    progress.map((row) => [opening(row.lecon, 3), row.vue, int(row.visites), minutes(row.temps_min), day(row.derniere_visite_le)]),
    'progress',
  );
  for (const row of progress) expect(lines).toContain(`${row.programme} · progression ${row.pourcentage_programme} %`);
  if (progress.length > 0) {
    const visits = progress.reduce((sum, row) => sum + row.visites, 0);
    const active = progress.reduce((sum, row) => sum + row.temps_min, 0);
    expect(lines).toContainEqual(
      expect.stringMatching(new RegExp(`^Total : ${int(progress.length)} leçons, ${int(visits)} visites, temps actif ${minutes(active)}`)),
    );
  }

  const evaluations = await fetchAll<Schemas['EvaluationRow']>('evaluations', query);
  const answers = await fetchAll<Schemas['QuizAnswerRow']>('quiz-answers', query);
  expectRows(
    lines,
    evaluations.map((row) => {
      const mine = answers.filter(
        (answer) => answer.programme_slug === row.programme_slug && answer.lecon === row.lecon && answer.tentative === row.tentative,
      );
      const correct = mine.length === 0 ? '—' : `${mine.filter((answer) => answer.correct === 'Oui').length}/${mine.length}`;
      return [day(row.date), opening(row.lecon, 3), String(row.tentative), `${row.score}/100`, correct, row.reussi];
    }),
    'evaluations',
  );
  if (evaluations.length > 0) {
    expect(lines).toContain(
      `Total : ${evaluations.length} tentatives, ${evaluations.filter((row) => row.reussi === 'Oui').length} réussies`,
    );
  }

  const attendance = await fetchAll<Schemas['AttendanceRow']>('attendance', query);
  expectRows(
    lines,
    attendance.map((row) => [
      dayTime(row.date),
      opening(row.seance),
      minutes(row.duree_prevue_min),
      row.present,
      minutes(row.temps_connecte_min),
      row.signe_apprenant,
      row.signe_formateur,
    ]),
    'attendance',
  );
  if (attendance.length > 0) {
    const present = attendance.filter((row) => row.present === 'Oui').length;
    const connected = attendance.reduce((sum, row) => sum + row.temps_connecte_min, 0);
    const planned = attendance.reduce((sum, row) => sum + row.duree_prevue_min, 0);
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^Total : ${attendance.length} séances, ${present} présences validées, durée prévue ${minutes(planned)}.*, temps connecté ${minutes(connected)}`,
        ),
      ),
    );
  }

  const documents = await fetchAll<Schemas['DocumentRow']>('documents', query);
  expectRows(
    lines,
    documents.map((row) => [
      row.type,
      opening(row.programme),
      day(row.emis_le),
      `${String(row.heures).replace('.', ',')} h`,
      outOf(row.score_completion, 100),
    ]),
    'documents',
  );

  const satisfaction = await fetchAll<Schemas['SatisfactionRow']>('satisfaction', query);
  expectRows(
    lines,
    satisfaction.map((row) => [day(row.repondu_le), opening(row.programme), `${row.note}/5`, `${row.nps}/10`, opening(row.verbatim)]),
    'satisfaction',
  );
  const tutoringRatings = await fetchAll<Schemas['TutoringRatingRow']>('tutoring-ratings', query);
  expectRows(
    lines,
    tutoringRatings.map((row) => [
      day(row.soumis_le),
      opening(row.seance),
      opening(row.formateur, 1),
      outOf(row.note_seance, 5),
      `${row.note_formateur}/5`,
      opening(row.commentaire),
    ]),
    'tutoring-ratings',
  );
  const lessonRatings = await fetchAll<Schemas['LessonRatingRow']>('lesson-ratings', query);
  expectRows(
    lines,
    lessonRatings.map((row) => [day(row.soumis_le), opening(row.lecon, 3), `${row.note}/5`, opening(row.commentaire)]),
    'lesson-ratings',
  );

  return { enrollments, logins, progress, evaluations, attendance, documents, satisfaction, tutoringRatings, lessonRatings };
}
