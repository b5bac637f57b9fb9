import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResourceDefinition, ResourceFilter } from '../db/resources/definition';
import { countResourceRows, pageResourceRows } from '../db/resources/list';
import { countedPeriods, progressResource } from '../db/resources/progress';
import { createTestDatabase, type TestDatabase } from './support/database';
import { seededOrganisation } from './support/learning-factories';

// `progress` places its rows from per-day and per-month counts of lesson_progress kept by
// triggers. They must equal a recount after any change, and the resource must equal what the
// rows themselves give.

let database: TestDatabase;
let org: Awaited<ReturnType<typeof seededOrganisation>>;
const progress = progressResource as unknown as ResourceDefinition;

beforeAll(async () => {
  database = await createTestDatabase();
  org = await seededOrganisation(database.db, { name: 'Formations Progrès', learners: 40, seed: 21 });
  await seededOrganisation(database.db, { name: 'Autre organisme', learners: 10, seed: 22 });
}, 120_000);
afterAll(async () => {
  await database.drop();
});

/** The kept counts and a recount from lesson_progress, each sorted, for both tables. */
async function keptAndRecounted() {
  const result: Record<string, { kept: unknown[]; recounted: unknown[] }> = {};
  for (const [table, period] of [['lesson_progress_days', sql`day`], ['lesson_progress_months', sql`date_trunc('month', day)::date`]] as const) {
    const kept = await sql`select org_id, programme_id, lesson_id, period::text, last_visits, enrolments from ${sql.table(table)}
      order by 1, 2, 3, 4`.execute(database.db);
    const recounted = await sql`select org_id, programme_id, lesson_id, ${period}::text as period, sum(last_visits)::int as last_visits, sum(enrolments)::int as enrolments
      from (
        select org_id, programme_id, lesson_id, (last_visit_at at time zone 'Europe/Paris')::date as day, 1 as last_visits, 0 as enrolments from lesson_progress
        union all
        select org_id, programme_id, lesson_id, (enrolled_at at time zone 'Europe/Paris')::date, 0, 1 from lesson_progress
      ) rows_by_day
      group by 1, 2, 3, 4 order by 1, 2, 3, 4`.execute(database.db);
    result[table] = { kept: kept.rows, recounted: recounted.rows };
  }
  return result;
}

async function expectCountsExact(): Promise<void> {
  for (const { kept, recounted } of Object.values(await keptAndRecounted())) expect(kept).toEqual(recounted);
}

/** The rows of `progress` by brute force: every lesson of every enrolment, its date in range. */
async function progressRowsByBruteForce(filter: ResourceFilter): Promise<number> {
  const { from, to } = countedPeriods(filter);
  const result = await sql<{ n: number }>`
    select count(*)::int as n
    from programme_enrolments pe
    join lessons l on l.programme_id = pe.programme_id
    left join lesson_progress lp on lp.membership_id = pe.membership_id and lp.lesson_id = l.id
    where pe.org_id = ${filter.orgId}
      and (${filter.programmeId}::uuid is null or pe.programme_id = ${filter.programmeId})
      and coalesce(lp.last_visit_at, pe.enrolled_at) >= (${from}::date::timestamp at time zone 'Europe/Paris')
      and coalesce(lp.last_visit_at, pe.enrolled_at) < (${to}::date::timestamp at time zone 'Europe/Paris')`.execute(database.db);
  return result.rows[0]!.n;
}

describe('progress counts kept per day and per month', () => {
  it('equal a recount after the bulk load', async () => {
    await expectCountsExact();
    expect((await keptAndRecounted()).lesson_progress_days!.kept.length).toBeGreaterThan(0);
  });

  it('follow updates, moved enrolment dates, deletions and cascades, and keep no empty rows', async () => {
    const { db } = database;
    // Visits moved across days, months and years; an update that moves no date.
    await sql`update lesson_progress set last_visit_at = last_visit_at + interval '17 days' where id % 3 = 0`.execute(db);
    await sql`update lesson_progress set last_visit_at = last_visit_at - interval '400 days', first_visit_at = first_visit_at - interval '400 days' where id % 7 = 0`.execute(db);
    await sql`update lesson_progress set visits = visits + 1 where id % 5 = 0`.execute(db);
    await expectCountsExact();
    // An enrolment date moved (copied onto its visits by a trigger), then enrolments deleted (their
    // visits go by cascade).
    await sql`update programme_enrolments set enrolled_at = enrolled_at - interval '40 days'
      where id in (select id from programme_enrolments where org_id = ${org.orgId} order by id limit 5)`.execute(db);
    await expectCountsExact();
    await sql`delete from programme_enrolments where id in (select id from programme_enrolments where org_id = ${org.orgId} order by id desc limit 5)`.execute(db);
    await expectCountsExact();
    const empty = await sql`select 1 from lesson_progress_days where last_visits = 0 and enrolments = 0
      union all select 1 from lesson_progress_months where last_visits = 0 and enrolments = 0`.execute(db);
    expect(empty.rows).toEqual([]);
  });

  it('stay exact when many transactions write the same lessons and days at once', async () => {
    const { db } = database;
    const rows = await sql<{ id: number }>`select id from lesson_progress where org_id = ${org.orgId} order by lesson_id, id limit 60`.execute(db);
    // Each transaction moves one visit to the same instant: all of them update the same counters.
    await Promise.all(rows.rows.map(({ id }, i) => db.transaction().execute(async (trx) => {
      await sql`update lesson_progress set last_visit_at = '2026-06-15T10:00:00Z', first_visit_at = least(first_visit_at, '2026-06-15T10:00:00Z') where id = ${id}`.execute(trx);
      if (i % 2 === 0) await sql`update lesson_progress set visits = visits + 1 where id = ${id}`.execute(trx);
    })));
    await expectCountsExact();
  });
});

describe('progress from the kept counts', () => {
  const filters: [string, Partial<ResourceFilter>][] = [
    ['the year', {}],
    ['the year before', { year: 2025 }],
    ['since mid-month', { updatedSince: '2026-03-17' }],
    ['since the first of a month', { updatedSince: '2026-05-01' }],
    ['since mid-December', { updatedSince: '2026-12-12' }],
    ['since a day of the year before', { updatedSince: '2025-06-10' }],
    ['since a day after the year', { year: 2025, updatedSince: '2026-02-10' }],
  ];

  it.each(filters)('counts and pages the rows of %s as the rows themselves give', async (_label, overrides) => {
    const programmes = await database.db.selectFrom('programmes').select('id').where('org_id', '=', org.orgId).orderBy('slug').execute();
    for (const programmeId of [null, programmes[0]!.id]) {
      const filter: ResourceFilter = { orgId: org.orgId, year: 2026, updatedSince: null, membershipId: null, programmeId, ...overrides };
      const expected = await progressRowsByBruteForce(filter);
      expect(await countResourceRows(database.db, progress, filter, null)).toEqual({ total: expected, truncated: false });
      const all = await progress.select(database.db, filter).execute();
      expect(all).toHaveLength(expected);
      // Pages cut anywhere, blocks of lessons included, give the same rows in the same order.
      const pages = [];
      for (let offset = 0; offset < expected; offset += 37) pages.push(...await pageResourceRows(database.db, progress, filter, 37, offset, null));
      expect(pages).toEqual(all);
    }
  });
});
