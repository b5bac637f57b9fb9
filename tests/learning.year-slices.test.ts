import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DB } from '../db/connection';
import type { ResourceDefinition, ResourceFilter } from '../db/resources/definition';
import { countResourceRows } from '../db/resources/list';
import { countedPeriods, progressResource } from '../db/resources/progress';
import { seededOrganisation } from './support/learning-factories';
import { useTestDatabase } from './support/lifecycle';
import { readResourcePage } from './support/resource-pages';

// The year slices (lesson_progress_years, enrolment_years) and the counts `progress` pages on
// (lesson_progress_days, lesson_progress_months) are kept by triggers in the transactions that
// write the facts. Whatever is written, updated or deleted, alone or at once, they must equal a
// recount from the facts; and `progress` must equal what its rows themselves give.

const database = useTestDatabase();
let org: Awaited<ReturnType<typeof seededOrganisation>>;
const progress = progressResource as unknown as ResourceDefinition;

beforeAll(async () => {
  org = await seededOrganisation(database.db, { name: 'Formations Progrès', learners: 40, seed: 21 });
  await seededOrganisation(database.db, { name: 'Autre organisme', learners: 10, seed: 22 });
}, 120_000);

const derivedTables = {
  lesson_progress_years: 'membership_id, lesson_id, year',
  enrolment_years: 'membership_id, programme_id, year',
  lesson_progress_days: 'org_id, period, programme_id, lesson_id',
  lesson_progress_months: 'org_id, period, programme_id, lesson_id',
} as const;

async function contents(db: DB) {
  const result: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(derivedTables)) {
    result[table] = (await sql.raw(`select * from ${table} order by ${key}`).execute(db)).rows;
  }
  return result;
}

/** What the triggers kept equals a recount of every organisation from the facts (made in a transaction rolled back). */
async function expectDerivedRowsExact(): Promise<void> {
  const kept = await contents(database.db);
  let recounted: Record<string, unknown[]> = {};
  await database.db
    .transaction()
    .execute(async (trx) => {
      await sql`select lesson_progress_years_recount(id), enrolment_years_recount(id), lesson_progress_counts_recount(id) from organisations`.execute(
        trx,
      );
      recounted = await contents(trx);
      throw new RollBack();
    })
    .catch((error) => {
      if (!(error instanceof RollBack)) throw error;
    });
  for (const table of Object.keys(derivedTables)) expect(kept[table], table).toEqual(recounted[table]);
  const empty =
    await sql`select 1 from lesson_progress_days where progress_rows = 0 union all select 1 from lesson_progress_months where progress_rows = 0`.execute(
      database.db,
    );
  expect(empty.rows).toEqual([]);
}

class RollBack extends Error {}

/** The rows of `progress` by brute force: the year rows of the filter. */
async function progressRowsByBruteForce(filter: ResourceFilter): Promise<number> {
  const { from, to } = countedPeriods(filter);
  const result = await sql<{ n: number }>`
    select count(*)::int as n from lesson_progress_years lpy
    where lpy.org_id = ${filter.orgId} and lpy.year = ${filter.year}
      and (${filter.programmeId}::uuid is null or lpy.programme_id = ${filter.programmeId})
      and lpy.last_visit_at >= (${from}::date::timestamp at time zone 'Europe/Paris')
      and lpy.last_visit_at < (${to}::date::timestamp at time zone 'Europe/Paris')`.execute(database.db);
  return result.rows[0]!.n;
}

describe('year slices and progress counts kept by triggers', () => {
  it('equal a recount after the bulk load', async () => {
    await expectDerivedRowsExact();
    const kept = await contents(database.db);
    for (const table of Object.keys(derivedTables)) expect(kept[table]!.length, table).toBeGreaterThan(0);
  });

  it('follow course time moved across days, months and New Year, new and deleted visits', async () => {
    const { db } = database;
    await sql`update activity_intervals set started_at = started_at + interval '17 days', ended_at = ended_at + interval '17 days'
      where kind = 'cours' and id % 3 = 0`.execute(db);
    // To 23:50 on 31 December, ten to forty minutes long: across New Year.
    await sql`update activity_intervals set started_at = '2025-12-31T22:50:00Z', ended_at = '2025-12-31T22:50:00Z'::timestamptz + (10 + id % 30) * interval '1 minute'
      where kind = 'cours' and id % 11 = 0`.execute(db);
    await sql`update activity_intervals set opens_visit = not opens_visit where kind = 'cours' and id % 13 = 0`.execute(db);
    await expectDerivedRowsExact();
    await sql`delete from activity_intervals where kind = 'cours' and id % 7 = 0`.execute(db);
    await expectDerivedRowsExact();
  });

  it('follow lessons viewed, attempts, documents, tutoring and enrolment dates, and cascades', async () => {
    const { db } = database;
    await sql`update lesson_progress set viewed_at = viewed_at + interval '300 days', last_visit_at = greatest(last_visit_at, viewed_at + interval '300 days')
      where viewed and id % 4 = 0`.execute(db);
    await sql`update quiz_attempts set completed_at = completed_at - interval '200 days' where score % 5 = 0`.execute(db);
    await sql`delete from quiz_attempts where score % 7 = 0`.execute(db);
    await sql`update documents set issued_at = issued_at + interval '90 days' where type = 'Attestation'`.execute(db);
    await sql`update tutoring_sessions set starts_at = starts_at - interval '1 year' where planned_minutes = 60`.execute(db);
    await sql`delete from tutoring_attendance where connected_minutes % 4 = 0`.execute(db);
    await sql`update programme_enrolments set enrolled_at = enrolled_at - interval '400 days'
      where id in (select id from programme_enrolments where org_id = ${org.orgId} order by id limit 5)`.execute(db);
    await expectDerivedRowsExact();
    await sql`delete from programme_enrolments where id in (select id from programme_enrolments where org_id = ${org.orgId} order by id desc limit 5)`.execute(
      db,
    );
    await sql`delete from tutoring_sessions where id in (select id from tutoring_sessions where org_id = ${org.orgId} order by id limit 10)`.execute(
      db,
    );
    await expectDerivedRowsExact();
  });

  it('stay exact when many transactions write the same learners, lessons and days at once', async () => {
    const { db } = database;
    const intervals = await sql<{
      id: number;
    }>`select id from activity_intervals where org_id = ${org.orgId} and kind = 'cours' order by lesson_id, id limit 60`.execute(db);
    // Each transaction moves one visit to the same day: all of them touch the same counters, and
    // several touch the same learner. Like the write paths (db/activity.ts), each locks the
    // learner's enrolments first: the triggers then wait for one another instead of deadlocking.
    await Promise.all(
      intervals.rows.map(({ id }, i) =>
        db.transaction().execute(async (trx) => {
          await sql`select 1 from programme_enrolments where membership_id = (select membership_id from activity_intervals where id = ${id})
        order by id for no key update`.execute(trx);
          await sql`update activity_intervals set started_at = '2026-06-15T10:00:00Z'::timestamptz + ${i} * interval '1 minute',
        ended_at = '2026-06-15T10:00:30Z'::timestamptz + ${i} * interval '1 minute' where id = ${id}`.execute(trx);
          if (i % 2 === 0)
            await sql`update quiz_attempts set completed_at = '2026-06-15T11:00:00Z' where membership_id = (select membership_id from activity_intervals where id = ${id})`.execute(
              trx,
            );
        }),
      ),
    );
    await expectDerivedRowsExact();
  });
});

describe('progress from the kept counts', () => {
  const filters: [string, Partial<ResourceFilter>][] = [
    ['the year', {}],
    ['the year before', { year: 2025 }],
    ['the first year', { year: 2024 }],
    ['since mid-month', { updatedSince: '2026-03-17' }],
    ['since the first of a month', { updatedSince: '2026-05-01' }],
    ['since New Year’s Day', { updatedSince: '2026-01-01' }],
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
      for (let offset = 0; offset < expected; offset += 37)
        pages.push(...(await readResourcePage(database.db, progress, filter, 37, offset, null)));
      expect(pages).toEqual(all);
    }
  });
});
