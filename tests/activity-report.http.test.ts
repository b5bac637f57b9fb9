import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../codegen/openapi';
import { currentParisYear } from '../db/paris-time';
import { seedOrganisation } from '../src/local/seed/generate';
import { extractPdfText, type PdfText } from './activity-report.pdf-text';
import { anErrorBody, bearer, buildTestApp } from './support/app';
import { addLearner, createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';
import { expectReportEqualsResources } from './support/report-reading';

// GET /activity-report through the real server, on a seeded organisation: the PDF's figures are
// read back with pdf.js and compared with the JSON resources for the same learner, year, programme.

type Schemas = components['schemas'];
const run = promisify(execFile);

// Many JSON reads to compare with: a rate limit that does not get in the way.
const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let other: Awaited<ReturnType<typeof createOrgWithKeys>>;
/** The learner of 2025 with the most logins among those who attended tutoring. */
let heavy: Schemas['LearnerRow'];
/** Learners who, with the heavy one, have rows in every section in 2025. */
let coverage: Schemas['LearnerRow'][];
let quietLearner: { userId: string; email: string };
let strangerEmail: string;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db, { name: 'Organisme Émeraude & Fils' });
  other = await createOrgWithKeys(fixture.db, { name: 'Autre organisme' });
  await seedOrganisation(fixture.db, { orgId: org.orgId, learners: 60, seed: 11, year: 2025, now: new Date('2026-01-10T12:00:00Z') });
  quietLearner = await addLearner(fixture.db, org.orgId, {
    email: 'zoe.quiet@exemple.fr',
    name: 'Zoé Tranquille',
    at: '2026-01-05 10:00',
  }).then(({ userId }) => ({ userId, email: 'zoe.quiet@exemple.fr' }));
  strangerEmail = 'secret@autre.fr';
  await addLearner(fixture.db, other.orgId, { email: strangerEmail, name: 'Secret', at: '2026-01-05 10:00' });
  const learners = await fetchAll<Schemas['LearnerRow']>('learners', 'year=2025');
  heavy = learners.filter((row) => row.seances_tutorat > 0).sort((a, b) => b.connexions - a.connexions)[0]!;
  coverage = [heavy];
  for (const resource of ['tutoring-ratings', 'lesson-ratings', 'satisfaction', 'documents', 'evaluations']) {
    const emails = new Set((await fetchAll<{ email: string }>(resource, 'year=2025')).map((row) => row.email));
    if (!coverage.some((row) => emails.has(row.email))) coverage.push(learners.find((row) => emails.has(row.email))!);
  }
}, 120_000);

const get = (url: string, headers: Record<string, string> = bearer(org.readKey)) => fixture.app.inject({ method: 'GET', url, headers });

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

describe('GET /activity-report', () => {
  it('gives the heavy learner’s year with every figure of the JSON resources', { timeout: 120_000 }, async () => {
    const { text, headers } = await report(`email=${encodeURIComponent(heavy.email)}&year=2025`);
    expect(text.lines).toContain('Organisme de formation Organisme Émeraude & Fils');
    expect(text.lines).toContain(`Apprenant ${heavy.nom}`);
    expect(text.lines).toContain('Période du 01/01/2025 au 31/12/2025');
    expect(text.lines).toContain('Programme Tous les programmes');
    expect(text.lines).toContainEqual(expect.stringMatching(/^Généré le \d{2}\/\d{2}\/\d{4} \d{2}:\d{2} \(heure de Paris\)$/));
    const rows = await expectReportEqualsResources(fetchAll, `email=${encodeURIComponent(heavy.email)}&year=2025`, text.lines);
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
      const rows = await expectReportEqualsResources(fetchAll, query, text.lines);
      for (const [resource, found] of Object.entries(rows)) totals[resource] = (totals[resource] ?? 0) + found.length;
      // A section (or sub-section of the ratings) is a table or "Aucune donnée", never both, never neither.
      const none = (found: unknown[]) => found.length === 0;
      const ratings = [rows.satisfaction, rows.tutoringRatings, rows.lessonRatings];
      const expectedEmpty =
        [rows.enrollments, rows.logins, rows.progress, rows.evaluations, rows.attendance, rows.documents].filter(none).length +
        (ratings.every(none) ? 1 : ratings.filter(none).length);
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
    const rows = await expectReportEqualsResources(fetchAll, query, text.lines);
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
    await expectReportEqualsResources(fetchAll, `user_id=${quietLearner.userId}&year=${currentParisYear()}`, text.lines);
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
    expect(response.json()).toEqual(anErrorBody('Indiquez le paramètre « email » ou « user_id » de l’apprenant.'));
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
    const limited = await buildTestApp(fixture.db, { rateLimitPerMinute: 2 });
    try {
      const key = await createKey(fixture.db, org.orgId, ['read']);
      const statuses: number[] = [];
      let last: LightMyRequestResponse | undefined;
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
  const present = () =>
    run('pdftoppm', ['-v']).then(
      () => true,
      () => false,
    );
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
