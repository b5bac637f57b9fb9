import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../codegen/openapi';
import { seedOrganisation } from '../scripts/seed/generate';
import { currentParisYear } from '../src/paris-time';
import { extractPdfText, normalise, type PdfText } from './activity-report.pdf-text';
import { bearer, buildTestApp } from './support/app';
import { createTestDatabase, type TestDatabase } from './support/database';
import { addLearner, createKey, createOrgWithKeys } from './support/factories';

// GET /activity-report through the real server, on a seeded organisation: the PDF's figures are
// read back with pdf.js and compared with the JSON resources for the same learner, year, programme.

type Schemas = components['schemas'];
const run = promisify(execFile);

let database: TestDatabase;
let app: FastifyInstance;
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let other: Awaited<ReturnType<typeof createOrgWithKeys>>;
/** The learner of 2025 with the most logins among those who attended tutoring. */
let heavy: Schemas['LearnerRow'];
/** Learners who, with the heavy one, have rows in every section in 2025. */
let coverage: Schemas['LearnerRow'][];
let quietLearner: { userId: string; email: string };
let strangerEmail: string;

beforeAll(async () => {
  database = await createTestDatabase();
  // Many JSON reads to compare with: a rate limit that does not get in the way.
  app = await buildTestApp(database.db, { rateLimitPerMinute: 100_000 });
  org = await createOrgWithKeys(database.db, { name: 'Organisme Émeraude & Fils' });
  other = await createOrgWithKeys(database.db, { name: 'Autre organisme' });
  await seedOrganisation(database.db, { orgId: org.orgId, learners: 60, seed: 11, year: 2025, now: new Date('2026-01-10T12:00:00Z') });
  quietLearner = await addLearner(database.db, org.orgId, { email: 'zoe.quiet@exemple.fr', name: 'Zoé Tranquille', at: '2026-01-05 10:00' })
    .then(({ userId }) => ({ userId, email: 'zoe.quiet@exemple.fr' }));
  strangerEmail = 'secret@autre.fr';
  await addLearner(database.db, other.orgId, { email: strangerEmail, name: 'Secret', at: '2026-01-05 10:00' });
  const learners = await fetchAll<Schemas['LearnerRow']>('learners', 'year=2025');
  heavy = learners.filter((row) => row.seances_tutorat > 0).sort((a, b) => b.connexions - a.connexions)[0]!;
  coverage = [heavy];
  for (const resource of ['tutoring-ratings', 'lesson-ratings', 'satisfaction', 'documents', 'evaluations']) {
    const emails = new Set((await fetchAll<{ email: string }>(resource, 'year=2025')).map((row) => row.email));
    if (!coverage.some((row) => emails.has(row.email))) coverage.push(learners.find((row) => emails.has(row.email))!);
  }
}, 120_000);
afterAll(async () => {
  await app.close();
  await database.drop();
});

const get = (url: string, headers: Record<string, string> = bearer(org.readKey)) => app.inject({ method: 'GET', url, headers });

async function fetchAll<Row>(resource: string, query: string): Promise<Row[]> {
  const rows: Row[] = [];
  for (let offset = 0; ; offset += 1000) {
    const response = await get(`/v1/${resource}?${query}&limit=1000&offset=${offset}`);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    rows.push(...body.data);
    if (!body.pagination.has_more) return rows;
  }
}

async function report(query: string): Promise<{ text: PdfText; headers: Record<string, unknown> }> {
  const response = await get(`/v1/activity-report?${query}`);
  expect(response.statusCode, response.body).toBe(200);
  expect(response.headers['content-type']).toBe('application/pdf');
  return { text: await extractPdfText(response.rawPayload), headers: response.headers };
}

// The French spelling of wire values, written here independently of the builder's own helpers.
const int = (value: number) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
const day = (date: string | null) => (date === null ? '—' : date.split('-').reverse().join('/'));
const dayTime = (dateTime: string | null) => (dateTime === null ? '—' : `${day(dateTime.slice(0, 10))} ${dateTime.slice(11)}`);
const minutes = (value: number) => `${int(value)} min`;
const outOf = (value: number | null, scale: number) => (value === null ? '—' : `${value}/${scale}`);
/** A free-text cell may wrap: its first line holds at least its first words. */
const opening = (text: string | null, words = 2) => (text === null ? '—' : normalise(text).split(' ').slice(0, words).join(' '));

/**
 * Each expected row is one line of the PDF holding its cells in order, the rows in the resource's
 * order, each on a line of its own: so the PDF has every row, with its figures, and no row twice.
 */
function expectRows(lines: string[], rows: string[][], what: string) {
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

function expectSummary(lines: string[], row: Schemas['LearnerRow']) {
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
    expect(lines.some((line) => line.includes(`${label} ${value}`)), `${label} ${value}`).toBe(true);
  }
  expect(lines).toContain(`Invité le ${day(row.invite_le)}`);
  expect(lines).toContain(`Inscrit le ${day(row.inscrit_le)}`);
}

/** Compares every section of a report with the JSON resources of the same query. */
async function expectReportEqualsResources(query: string, lines: string[]) {
  const [learner] = await fetchAll<Schemas['LearnerRow']>('learners', query);
  expectSummary(lines, learner!);

  const enrollments = await fetchAll<Schemas['EnrollmentRow']>('enrollments', query);
  expectRows(lines, enrollments.map((row) => [opening(row.programme), `${row.pourcentage} %`, `${row.lecons_vues}/${row.lecons_total}`, row.complete,
    day(row.complete_le), dayTime(row.premiere_connexion_le), dayTime(row.derniere_connexion_le)]), 'enrollments');

  const logins = await fetchAll<Schemas['LoginRow']>('logins', query);
  expectRows(lines, logins.map((row) => [dayTime(row.debut), row.fin === null ? 'en cours' : dayTime(row.fin),
    row.duree_min === null ? '—' : minutes(row.duree_min), row.ip]), 'logins');
  if (logins.length > 0) {
    const total = logins.reduce((sum, row) => sum + (row.duree_min ?? 0), 0);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^Total : ${int(logins.length)} connexions, durée cumulée ${minutes(total)}`)));
  }

  const progress = await fetchAll<Schemas['ProgressRow']>('progress', query);
  const perModule = new Map<string, { module: string; minutes: number }>();
  for (const row of progress) {
    const entry = perModule.get(`${row.programme_slug}/${row.module}`) ?? { module: row.module, minutes: 0 };
    entry.minutes += row.temps_min;
    perModule.set(`${row.programme_slug}/${row.module}`, entry);
  }
  // The chart (module and minutes), then each programme's and module's heading, then its lessons.
  expectRows(lines, [...perModule.values()].map((entry) => [opening(entry.module, 3), minutes(entry.minutes)]), 'chart');
  expectRows(lines, progress.map((row) => [opening(row.lecon, 3), row.vue, int(row.visites), minutes(row.temps_min), day(row.derniere_visite_le)]), 'progress');
  for (const row of progress) expect(lines).toContain(`${row.programme} · progression ${row.pourcentage_programme} %`);
  if (progress.length > 0) {
    const visits = progress.reduce((sum, row) => sum + row.visites, 0);
    const active = progress.reduce((sum, row) => sum + row.temps_min, 0);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^Total : ${int(progress.length)} leçons, ${int(visits)} visites, temps actif ${minutes(active)}`)));
  }

  const evaluations = await fetchAll<Schemas['EvaluationRow']>('evaluations', query);
  const answers = await fetchAll<Schemas['QuizAnswerRow']>('quiz-answers', query);
  expectRows(lines, evaluations.map((row) => {
    const mine = answers.filter((answer) => answer.programme_slug === row.programme_slug && answer.lecon === row.lecon && answer.tentative === row.tentative);
    const correct = mine.length === 0 ? '—' : `${mine.filter((answer) => answer.correct === 'Oui').length}/${mine.length}`;
    return [day(row.date), opening(row.lecon, 3), String(row.tentative), `${row.score}/100`, correct, row.reussi];
  }), 'evaluations');
  if (evaluations.length > 0) {
    expect(lines).toContain(`Total : ${evaluations.length} tentatives, ${evaluations.filter((row) => row.reussi === 'Oui').length} réussies`);
  }

  const attendance = await fetchAll<Schemas['AttendanceRow']>('attendance', query);
  expectRows(lines, attendance.map((row) => [dayTime(row.date), opening(row.seance), minutes(row.duree_prevue_min), row.present,
    minutes(row.temps_connecte_min), row.signe_apprenant, row.signe_formateur]), 'attendance');
  if (attendance.length > 0) {
    const present = attendance.filter((row) => row.present === 'Oui').length;
    const connected = attendance.reduce((sum, row) => sum + row.temps_connecte_min, 0);
    const planned = attendance.reduce((sum, row) => sum + row.duree_prevue_min, 0);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(
      `^Total : ${attendance.length} séances, ${present} présences validées, durée prévue ${minutes(planned)}.*, temps connecté ${minutes(connected)}`,
    )));
  }

  const documents = await fetchAll<Schemas['DocumentRow']>('documents', query);
  expectRows(lines, documents.map((row) => [row.type, opening(row.programme), day(row.emis_le), `${String(row.heures).replace('.', ',')} h`,
    outOf(row.score_completion, 100)]), 'documents');

  const satisfaction = await fetchAll<Schemas['SatisfactionRow']>('satisfaction', query);
  expectRows(lines, satisfaction.map((row) => [day(row.repondu_le), opening(row.programme), `${row.note}/5`, `${row.nps}/10`, opening(row.verbatim)]), 'satisfaction');
  const tutoringRatings = await fetchAll<Schemas['TutoringRatingRow']>('tutoring-ratings', query);
  expectRows(lines, tutoringRatings.map((row) => [day(row.soumis_le), opening(row.seance), opening(row.formateur, 1), outOf(row.note_seance, 5),
    `${row.note_formateur}/5`, opening(row.commentaire)]), 'tutoring-ratings');
  const lessonRatings = await fetchAll<Schemas['LessonRatingRow']>('lesson-ratings', query);
  expectRows(lines, lessonRatings.map((row) => [day(row.soumis_le), opening(row.lecon, 3), `${row.note}/5`, opening(row.commentaire)]), 'lesson-ratings');

  return { enrollments, logins, progress, evaluations, attendance, documents, satisfaction, tutoringRatings, lessonRatings };
}

describe('GET /activity-report', () => {
  it('gives the heavy learner’s year with every figure of the JSON resources', { timeout: 120_000 }, async () => {
    const { text, headers } = await report(`email=${encodeURIComponent(heavy.email)}&year=2025`);
    expect(text.lines).toContain('Organisme de formation Organisme Émeraude & Fils');
    expect(text.lines).toContain(`Apprenant ${heavy.nom}`);
    expect(text.lines).toContain('Période du 01/01/2025 au 31/12/2025');
    expect(text.lines).toContain('Programme Tous les programmes');
    expect(text.lines).toContainEqual(expect.stringMatching(/^Généré le \d{2}\/\d{2}\/\d{4} \d{2}:\d{2} \(heure de Paris\)$/));
    const rows = await expectReportEqualsResources(`email=${encodeURIComponent(heavy.email)}&year=2025`, text.lines);
    for (const resource of ['enrollments', 'logins', 'progress', 'evaluations', 'attendance', 'documents'] as const) {
      expect(rows[resource].length, resource).toBeGreaterThan(0);
    }
    expect(headers['content-disposition']).toMatch(/^attachment; filename="rapport-activite-[a-z0-9-]+-2025\.pdf"/);
    expect(Number(headers['x-ratelimit-limit'])).toBe(100_000);
  });

  it('agrees with the JSON resources in every section, for learners who have rows in each', { timeout: 180_000 }, async () => {
    const totals: Record<string, number> = {};
    for (const learner of coverage) {
      const query = `email=${encodeURIComponent(learner.email)}&year=2025`;
      const { text } = await report(query);
      const rows = await expectReportEqualsResources(query, text.lines);
      for (const [resource, found] of Object.entries(rows)) totals[resource] = (totals[resource] ?? 0) + found.length;
      // A section (or sub-section of the ratings) is a table or "Aucune donnée", never both, never neither.
      const none = (found: unknown[]) => found.length === 0;
      const ratings = [rows.satisfaction, rows.tutoringRatings, rows.lessonRatings];
      const expectedEmpty = [rows.enrollments, rows.logins, rows.progress, rows.evaluations, rows.attendance, rows.documents].filter(none).length
        + (ratings.every(none) ? 1 : ratings.filter(none).length);
      expect(text.lines.filter((line) => line.startsWith('Aucune donnée')).length, learner.email).toBe(expectedEmpty);
    }
    for (const [resource, total] of Object.entries(totals)) expect(total, resource).toBeGreaterThan(0);
  });

  it('limits the report to one programme, with the year’s summary and logins unchanged', { timeout: 120_000 }, async () => {
    const all = await fetchAll<Schemas['EnrollmentRow']>('enrollments', `email=${encodeURIComponent(heavy.email)}&year=2025`);
    const programme = all[0]!;
    const query = `user_id=${await userIdOf(heavy.email)}&year=2025&programme=${programme.programme_slug}`;
    const { text } = await report(query);
    expect(text.lines).toContain(`Programme ${programme.programme} (${programme.programme_slug})`);
    const rows = await expectReportEqualsResources(query, text.lines);
    expect(rows.enrollments).toHaveLength(1);
    // Nothing of the other programmes.
    for (const otherProgramme of all.slice(1)) expect(text.lines.join('\n')).not.toContain(otherProgramme.programme);
  });

  it('gives a learner with no activity a short, valid report', async () => {
    const { text, headers } = await report(`user_id=${quietLearner.userId}`);
    expect(text.pageCount).toBeLessThanOrEqual(2);
    expect(text.lines).toContain(`Apprenant Zoé Tranquille`);
    expect(text.lines).toContain(`Période du 01/01/${currentParisYear()} au 31/12/${currentParisYear()}`);
    expect(text.lines.filter((line) => line.startsWith('Aucune donnée'))).toHaveLength(7);
    await expectReportEqualsResources(`user_id=${quietLearner.userId}&year=${currentParisYear()}`, text.lines);
    // The default year is the current Paris year; accents kept in the RFC 6266 filename*.
    expect(headers['content-disposition']).toBe(
      `attachment; filename="rapport-activite-zoe-tranquille-${currentParisYear()}.pdf"; filename*=UTF-8''rapport-activite-zo%C3%A9-tranquille-${currentParisYear()}.pdf`,
    );
  });

  it('renders reports asked in parallel, each for its own learner', { timeout: 120_000 }, async () => {
    const learners = (await fetchAll<Schemas['LearnerRow']>('learners', 'year=2025')).filter((row) => row.nom).slice(0, 6);
    const responses = await Promise.all(learners.map((row) => get(`/v1/activity-report?email=${encodeURIComponent(row.email)}&year=2025`)));
    for (const [index, response] of responses.entries()) {
      expect(response.statusCode).toBe(200);
      const text = await extractPdfText(response.rawPayload);
      expect(text.info.Title).toBe(`Rapport d’activité 2025 · ${learners[index]!.nom}`);
      expect(text.lines).toContain(`Adresse électronique ${learners[index]!.email}`);
    }
  });

  it('answers 400 when neither email nor user_id is given', async () => {
    const response = await get('/v1/activity-report?year=2025');
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: 'Indiquez le paramètre « email » ou « user_id » de l’apprenant.' });
  });

  it('answers 400 for an unknown programme and a malformed parameter', async () => {
    const unknown = await get(`/v1/activity-report?email=${encodeURIComponent(heavy.email)}&programme=cuisine-moleculaire`);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toContain('« programme »');
    const year = await get(`/v1/activity-report?email=${encodeURIComponent(heavy.email)}&year=abc`);
    expect(year.statusCode).toBe(400);
    expect(year.json().error).toContain('year');
  });

  it('answers 404 for a learner outside the organisation, whoever else knows them', async () => {
    for (const query of [
      'email=personne@exemple.fr',
      `email=${strangerEmail}`,
      'user_id=00000000-0000-4000-8000-000000000000',
      // Both given: they must name the same learner.
      `email=${encodeURIComponent(heavy.email)}&user_id=${quietLearner.userId}`,
    ]) {
      const response = await get(`/v1/activity-report?${query}`);
      expect(response.statusCode, query).toBe(404);
      expect(response.json().error).toMatch(/^Aucun apprenant de votre organisation/);
    }
  });

  it('answers 401 without a valid key', async () => {
    expect((await get(`/v1/activity-report?user_id=${quietLearner.userId}`, {})).statusCode).toBe(401);
    expect((await get(`/v1/activity-report?user_id=${quietLearner.userId}`, bearer('sk_live_inconnue'))).statusCode).toBe(401);
    // Another organisation's key sees nothing of this one.
    expect((await get(`/v1/activity-report?user_id=${quietLearner.userId}`, bearer(other.readKey))).statusCode).toBe(404);
  });

  it('answers 429 past the rate limit, like every endpoint', async () => {
    const limited = await buildTestApp(database.db, { rateLimitPerMinute: 2 });
    try {
      const key = await createKey(database.db, org.orgId, ['read']);
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 3; i++) {
        last = await limited.inject({ method: 'GET', url: '/v1/activity-report?email=personne@exemple.fr', headers: bearer(key.key) });
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([404, 404, 429]);
      expect(last!.json().retry_after).toBeGreaterThan(0);
      expect(Number(last!.headers['retry-after'])).toBe(last!.json().retry_after);
    } finally {
      await limited.close();
    }
  });

  // pdftoppm draws the pages as a reader sees them; the PNGs are kept for a human to look at.
  it('draws the heavy learner’s report as PNG pages', { timeout: 180_000 }, async (context) => {
    const missing = await ensurePdftoppm();
    if (missing) {
      console.log(`Test des pages PNG ignoré : ${missing}`);
      context.skip(missing);
    }
    const response = await get(`/v1/activity-report?email=${encodeURIComponent(heavy.email)}&year=2025`);
    const folder = path.join(os.tmpdir(), 'activity-report-pages');
    await rm(folder, { recursive: true, force: true });
    await mkdir(folder, { recursive: true });
    const pdfPath = path.join(folder, 'rapport.pdf');
    await import('node:fs/promises').then(({ writeFile }) => writeFile(pdfPath, response.rawPayload));
    await run('pdftoppm', ['-r', '80', '-png', pdfPath, path.join(folder, 'page')]);
    const pages = (await readdir(folder)).filter((file) => file.endsWith('.png')).sort();
    const { pageCount } = await extractPdfText(response.rawPayload);
    expect(pages).toHaveLength(pageCount);
    for (const page of pages) {
      const png = await readFile(path.join(folder, page));
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
      // An A4 page at 80 dpi: 661.4 × 935.4 pixels, rounded either way.
      expect(Math.abs(png.readUInt32BE(16) - 661.4)).toBeLessThan(1);
      expect(Math.abs(png.readUInt32BE(20) - 935.4)).toBeLessThan(1);
    }
    console.log(`Pages du rapport en PNG : ${folder} (${pages.length} pages)`);
  });
});

async function userIdOf(email: string): Promise<string> {
  const body = (await get(`/v1/users?email=${encodeURIComponent(email)}`)).json();
  return body.meta.learner.user_id;
}

/** null when pdftoppm is there (installed with apt when possible), else why it is not. */
async function ensurePdftoppm(): Promise<string | null> {
  const present = () => run('pdftoppm', ['-v']).then(() => true, () => false);
  if (await present()) return null;
  try {
    await run('apt-get', ['install', '-y', 'poppler-utils'], { timeout: 120_000 });
  } catch {
    try {
      await run('apt-get', ['update'], { timeout: 120_000 });
      await run('apt-get', ['install', '-y', 'poppler-utils'], { timeout: 120_000 });
    } catch (error) {
      return `pdftoppm absent et apt-get install -y poppler-utils impossible (${(error as Error).message.split('\n')[0]})`;
    }
  }
  return (await present()) ? null : 'pdftoppm absent après apt-get install -y poppler-utils';
}
