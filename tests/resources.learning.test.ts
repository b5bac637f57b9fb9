import { beforeAll, describe, expect, it } from 'vitest';
import { expectContract } from './support/contract';
import {
  asCsvCells,
  client,
  type LearningResource,
  learningResources,
  type Row,
  seededOrganisation,
  withoutProgramme,
} from './support/learning-factories';
import { useTestApp, useTestAppOn } from './support/lifecycle';
import { listResource } from './support/list-resources';

// One organisation of 60 generated learners: every resource has rows in both years.
const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
const cappedFixture = useTestAppOn(fixture, { rateLimitPerMinute: 100_000, aggregationCap: 5 });
let org: Awaited<ReturnType<typeof seededOrganisation>>;
let api: ReturnType<typeof client>;
let capped: ReturnType<typeof client>;

beforeAll(async () => {
  org = await seededOrganisation(fixture.db, { name: 'Formations Horizon', learners: 60, seed: 11 });
  api = client(fixture.app, org.readKey);
  capped = client(cappedFixture.app, org.readKey);
}, 120_000);

/** The natural date a row shows ('YYYY-MM-DD'), or null when it falls back on a date the row does not show. */
const naturalDate: Record<LearningResource, ((row: Row) => string | null) | null> = {
  learners: null,
  attendance: (row) => String(row.date).slice(0, 10),
  evaluations: (row) => row.date as string,
  'quiz-answers': (row) => row.date as string,
  documents: (row) => row.emis_le as string,
  satisfaction: (row) => row.repondu_le as string,
  enrollments: (row) => row.derniere_activite_le as string | null,
  progress: (row) => row.derniere_visite_le as string | null,
  logins: (row) => String(row.debut).slice(0, 10),
  'tutoring-ratings': (row) => row.soumis_le as string,
  'lesson-ratings': (row) => row.soumis_le as string,
};

/** What consecutive rows must never go backwards on (the documented order, as far as rows show it). */
const orderKey: Record<LearningResource, (row: Row) => (string | number)[] | null> = {
  learners: (row) => [row.email as string],
  attendance: (row) => [row.date as string, row.seance as string, row.email as string],
  evaluations: (row) => [row.date as string, row.tentative as number],
  'quiz-answers': (row) => [row.date as string, row.tentative as number],
  documents: (row) => [row.emis_le as string],
  satisfaction: (row) => [row.repondu_le as string],
  enrollments: (row) => (row.derniere_activite_le === null ? null : [row.derniere_activite_le as string]),
  progress: (row) => [row.programme_slug as string],
  logins: (row) => [row.debut as string],
  'tutoring-ratings': (row) => [row.soumis_le as string],
  'lesson-ratings': (row) => [row.soumis_le as string],
};

function compareKeys(a: (string | number)[], b: (string | number)[]): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i]! < b[i]!) return -1;
    if (a[i]! > b[i]!) return 1;
  }
  return 0;
}

function expectOrdered(resource: LearningResource, rows: Row[]) {
  for (let i = 1; i < rows.length; i++) {
    const [before, after] = [orderKey[resource](rows[i - 1]!), orderKey[resource](rows[i]!)];
    if (before && after) expect(compareKeys(before, after), `${resource} ligne ${i}`).toBeLessThanOrEqual(0);
    // progress: within one lesson, learners by email.
    if (resource === 'progress') {
      const [a, b] = [rows[i - 1]!, rows[i]!];
      if (a.programme_slug === b.programme_slug && a.module === b.module && a.lecon === b.lecon) expect(a.email! < b.email!).toBe(true);
    }
  }
}

const columns = (resource: LearningResource) => [...listResource(resource).columns];

it('knows the documented natural date and order of every resource of the learning data', () => {
  // The resources come from openapi.yaml and db/resources/; what each promises about its dates and
  // order is written above, and a resource added without it would go untested on both.
  expect(Object.keys(naturalDate).sort()).toEqual([...learningResources].sort());
  expect(Object.keys(orderKey).sort()).toEqual([...learningResources].sort());
});

describe.each(learningResources)('GET /%s', (resource) => {
  it('answers rows of the documented shape, fields in the contract order, validated against openapi.yaml', async () => {
    const body = await api.json(`/v1/${resource}?year=2026&limit=200`);
    expectContract(`/${resource}`, body);
    expect(body.resource).toBe(resource);
    expect(body.data.length).toBeGreaterThan(0);
    for (const row of body.data) expect(Object.keys(row)).toEqual(columns(resource));
    expect(body.meta).toMatchObject({ org_name: 'Formations Horizon', year: 2026, truncated: false, updated_since: null, programme: null });
  });

  it('pages in a stable order without losing or repeating a row, and the CSV holds the same rows', async () => {
    const all = await api.all(resource, 'year=2026');
    const pageSize = Math.max(1, Math.ceil(all.length / 7));
    const paged: Row[] = [];
    for (let offset = 0; ; offset += pageSize) {
      const body = await api.json(`/v1/${resource}?year=2026&limit=${pageSize}&offset=${offset}`);
      expect(body.pagination).toMatchObject({ limit: pageSize, offset, total: all.length, count: body.data.length });
      paged.push(...body.data);
      if (!body.pagination.has_more) break;
    }
    expect(paged).toEqual(all);
    expectOrdered(resource, all);
    const csv = await api.csv(resource, 'year=2026');
    expect(csv.header).toEqual(columns(resource));
    expect(csv.rows).toEqual(all.map((row) => asCsvCells(row, columns(resource))));
  });

  it('keeps the rows of the year asked (Paris dates), and of the current year by default', async () => {
    const natural = naturalDate[resource];
    const [of2025, of2026, byDefault] = [
      await api.all(resource, 'year=2025'),
      await api.all(resource, 'year=2026'),
      await api.all(resource),
    ];
    expect(byDefault).toEqual(of2026);
    expect(of2025.length).toBeGreaterThan(0);
    if (!natural) return;
    for (const [year, rows] of [
      ['2025', of2025],
      ['2026', of2026],
    ] as const) {
      for (const row of rows) {
        const date = natural(row);
        if (date !== null) expect(date.slice(0, 4)).toBe(year);
      }
    }
  });

  const ignoresUpdatedSince = !listResource(resource).filtersByUpdatedSince;
  it(ignoresUpdatedSince ? 'ignores updated_since' : 'keeps rows whose natural date is on or after updated_since', async () => {
    const year = await api.all(resource, 'year=2026');
    const since = await api.json(`/v1/${resource}?year=2026&updated_since=2026-06-01&limit=1000`);
    const rows = await api.all(resource, 'year=2026&updated_since=2026-06-01');
    if (ignoresUpdatedSince) {
      expect(since.meta.updated_since).toBeNull();
      expect(rows).toEqual(year);
      return;
    }
    expect(since.meta.updated_since).toBe('2026-06-01');
    const natural = naturalDate[resource]!;
    for (const row of rows) {
      const date = natural(row);
      if (date !== null) expect(date >= '2026-06-01').toBe(true);
    }
    if (resource === 'enrollments' || resource === 'progress') {
      // The fallback date (enrolment) is not in the row: the rows kept are some of the year's.
      expect(rows.length).toBeLessThan(year.length);
    } else {
      expect(rows).toEqual(year.filter((row) => natural(row)! >= '2026-06-01'));
    }
  });

  it('restricts to one learner by email (any case) or user_id, uncapped, with meta.learner', async () => {
    const year = await api.all(resource, 'year=2026');
    const email = year[Math.floor(year.length / 2)]!.email as string;
    const account = await fixture.db.selectFrom('accounts').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    const byEmail = await api.json(`/v1/${resource}?year=2026&limit=1000&email=${encodeURIComponent(email.toUpperCase())}`);
    expectContract(`/${resource}`, byEmail);
    expect(byEmail.meta).toMatchObject({ learner: { user_id: account.id, email }, truncated: false });
    expect(byEmail.data).toEqual(year.filter((row) => row.email === email));
    const byUserId = await api.json(`/v1/${resource}?year=2026&limit=1000&user_id=${account.id}`);
    expect(byUserId.data).toEqual(byEmail.data);
    // The cap bounds organisation-wide requests only.
    const cappedLearner = await capped.json(`/v1/${resource}?year=2026&limit=1000&email=${encodeURIComponent(email)}`);
    expect(cappedLearner.data).toEqual(byEmail.data);
    expect(cappedLearner.meta.truncated).toBe(false);
    const unknown = await api.get(`/v1/${resource}?email=personne%40exemple.fr`);
    expect(unknown.statusCode).toBe(404);
  });

  it(
    withoutProgramme.includes(resource) ? 'ignores programme' : 'restricts to one programme by slug, and refuses an unknown slug',
    async () => {
      const year = await api.all(resource, 'year=2026');
      const body = await api.json(`/v1/${resource}?year=2026&limit=1000&programme=excel-intermediaire`);
      const rows = await api.all(resource, 'year=2026&programme=excel-intermediaire');
      if (withoutProgramme.includes(resource)) {
        expect(body.meta.programme).toBeNull();
        expect(rows).toEqual(year);
        return;
      }
      expect(body.meta.programme).toBe('excel-intermediaire');
      expect(rows.length).toBeGreaterThan(0);
      expect(rows).toEqual(year.filter((row) => row.programme_slug === 'excel-intermediaire'));
      const unknown = await api.get(`/v1/${resource}?programme=cuisine-moleculaire`);
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json().error).toMatch(/programme/);
    },
  );

  it('works over at most AGGREGATION_CAP rows organisation-wide and says so', async () => {
    const year = await api.all(resource, 'year=2026');
    expect(year.length).toBeGreaterThan(5);
    const first = await capped.json(`/v1/${resource}?year=2026&limit=3`);
    expect(first.meta.truncated).toBe(true);
    expect(first.pagination).toMatchObject({ total: 5, count: 3, has_more: true });
    const last = await capped.json(`/v1/${resource}?year=2026&limit=3&offset=3`);
    expect(last.pagination).toMatchObject({ total: 5, count: 2, has_more: false });
    expect([...first.data, ...last.data]).toEqual(year.slice(0, 5));
    const beyond = await capped.json(`/v1/${resource}?year=2026&limit=3&offset=6`);
    expect(beyond.data).toEqual([]);
    const csv = await capped.csv(resource, 'year=2026');
    expect(csv.rows).toEqual(year.slice(0, 5).map((row) => asCsvCells(row, columns(resource))));
  });
});
