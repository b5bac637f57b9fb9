import { type RawBuilder, sql } from 'kysely';
import type { DB } from '../../src/database';
import { ouiNon, parisDate } from '../render';
import type { ResourceDefinition, ResourceFilter, RowWindow } from './definition';
import { progressPercent } from './enrollments';
import { naturalTimestampFilter } from './natural-date';
import { scopeCondition } from './scope';
import type { components } from '../../codegen/openapi';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type ProgressRow = components['schemas']['ProgressRow'];

/*
 * `progress` is every lesson of every enrolment in scope, the lesson opened or not, in the order
 * programme slug, module, lesson, email; its natural date is the last visit, else the enrolment.
 * Rows of unopened lessons do not exist in a table, so no index holds that order. Instead the rows
 * are counted per lesson (from the enrolments and the organisation's visits, without building
 * them), which places each lesson's block in the order; a page then builds only the blocks it
 * overlaps and sorts them by email.
 */

const enrolmentScope = (filter: ResourceFilter) =>
  scopeCondition({ org: 'pe.org_id', membership: 'pe.membership_id', programme: 'pe.programme_id' }, sql<boolean>`true`, filter);

/**
 * Per lesson, the progress rows whose last visit (`in_range`) and whose enrolment
 * (`enrolled_in_range`) are in the filter's range. For the organisation (or a programme) they are
 * summed from the counts kept per month, plus per day from an `updated_since` in mid-month to the
 * next month; one learner's are counted from their own rows.
 */
function visitedPerLesson(filter: ResourceFilter): RawBuilder<unknown> {
  if (filter.membershipId) {
    const visitScope = scopeCondition({ org: 'lp.org_id', membership: 'lp.membership_id', programme: 'lp.programme_id' }, sql<boolean>`true`, filter);
    return sql`
      select lp.lesson_id,
        count(*) filter (where ${naturalTimestampFilter(sql.ref('lp.last_visit_at'), filter)}) as in_range,
        count(*) filter (where ${naturalTimestampFilter(sql.ref('lp.enrolled_at'), filter)}) as enrolled_in_range
      from lesson_progress lp
      where ${visitScope}
      group by lp.lesson_id`;
  }
  const { from, fullMonthsFrom, to } = countedPeriods(filter);
  const counts = (table: 'lesson_progress_days' | 'lesson_progress_months', start: string, end: string) => sql`
    select c.lesson_id, c.last_visits, c.enrolments from ${sql.table(table)} c
    where c.org_id = ${filter.orgId} ${filter.programmeId ? sql`and c.programme_id = ${filter.programmeId}` : sql``}
      and c.period >= ${start}::date and c.period < ${end}::date`;
  return sql`
    select c.lesson_id, sum(c.last_visits) as in_range, sum(c.enrolments) as enrolled_in_range
    from (${counts('lesson_progress_months', fullMonthsFrom, to)} union all ${counts('lesson_progress_days', from, fullMonthsFrom < to ? fullMonthsFrom : to)}) c
    group by c.lesson_id`;
}

/**
 * The filter's range as Paris days ('YYYY-MM-DD'): from the later of the year's start and
 * `updated_since`, to the next year's start; whole months from the first month start in it.
 */
export function countedPeriods(filter: Pick<ResourceFilter, 'year' | 'updatedSince'>): { from: string; fullMonthsFrom: string; to: string } {
  const yearStart = `${filter.year}-01-01`;
  const from = filter.updatedSince && filter.updatedSince > yearStart ? filter.updatedSince : yearStart;
  const [year, month, day] = from.split('-').map(Number) as [number, number, number];
  const fullMonthsFrom = day === 1 ? from : month === 12 ? `${year + 1}-01-01` : `${year}-${String(month + 1).padStart(2, '0')}-01`;
  return { from, fullMonthsFrom, to: `${filter.year + 1}-01-01` };
}

/** Common table expressions: `placed` holds each lesson's rank, row count `n` and first position `first`. */
function lessonBlocks(filter: ResourceFilter): RawBuilder<unknown> {
  const lessonScope = filter.programmeId ? sql`and l.programme_id = ${filter.programmeId}` : sql``;
  return sql`
    ordered_lessons as materialized (
      select l.id as lesson_id, l.programme_id, row_number() over (order by p.slug, mo.position, l.position) as rank,
        count(*) over (partition by l.programme_id) as lessons_total
      from lessons l join modules mo on mo.id = l.module_id join programmes p on p.id = l.programme_id
      where l.org_id = ${filter.orgId} ${lessonScope}
    ),
    visited as (${visitedPerLesson(filter)}),
    per_programme as (
      select pe.programme_id, count(*) filter (where ${naturalTimestampFilter(sql.ref('pe.enrolled_at'), filter)}) as enrolled_in_range
      from programme_enrolments pe where ${enrolmentScope(filter)}
      group by pe.programme_id
    ),
    counted as (
      -- An unopened lesson's row is in range when the enrolment is; an opened one when its last visit is.
      select ol.lesson_id, ol.programme_id, ol.rank, ol.lessons_total,
        coalesce(pp.enrolled_in_range, 0) - coalesce(v.enrolled_in_range, 0) + coalesce(v.in_range, 0) as n
      from ordered_lessons ol
      left join per_programme pp on pp.programme_id = ol.programme_id
      left join visited v on v.lesson_id = ol.lesson_id
    ),
    placed as (select *, (sum(n) over (order by rank) - n)::int as first from counted)`;
}

/** The rows of the lessons of `placed` that overlap the window (all of them without a window). */
function progressRows(db: DB, filter: ResourceFilter, window: RowWindow | null) {
  const overlaps = window ? sql`and b.first < ${window.offset + window.limit} and b.first + b.n > ${window.offset}` : sql``;
  const inWindow = window ? sql`where r.first + r.nth - 1 >= ${window.offset} and r.first + r.nth - 1 < ${window.offset + window.limit}` : sql``;
  const rows = sql`(
    with ${lessonBlocks(filter)},
    blocks as (
      select b.rank, b.first, pe.id as enrolment_id, pe.membership_id, pe.programme_id, pe.lessons_viewed, b.lessons_total, b.lesson_id,
        a.name, a.email, lp.viewed, lp.visits, lp.active_seconds, lp.last_visit_at,
        row_number() over (partition by b.lesson_id order by a.email) as nth
      from placed b
      join programme_enrolments pe on pe.programme_id = b.programme_id and ${enrolmentScope(filter)}
      join memberships m on m.id = pe.membership_id
      join accounts a on a.id = m.account_id
      -- One row at most, by the unique (membership, lesson) index: a lookup per enrolment of the
      -- page's blocks, where a join would read the organisation's whole lesson_progress.
      left join lateral (
        select lp.viewed, lp.visits, lp.active_seconds, lp.last_visit_at from lesson_progress lp
        where lp.membership_id = pe.membership_id and lp.lesson_id = b.lesson_id limit 1
      ) lp on true
      where b.n > 0 ${overlaps}
        and ${naturalTimestampFilter(sql`coalesce(lp.last_visit_at, pe.enrolled_at)`, filter)}
    )
    select r.* from blocks r ${inWindow}
  )`;
  return db.selectFrom(rows.as('pe'))
    .innerJoin('lessons as l', 'l.id', sql.ref('pe.lesson_id') as never)
    .innerJoin('modules as mo', 'mo.id', 'l.module_id')
    .innerJoin('programmes as p', 'p.id', 'l.programme_id')
    .select([
      sql<string | null>`pe.name`.as('apprenant'),
      sql<string>`pe.email`.as('email'),
      'p.title as programme',
      'p.slug as programme_slug',
      progressPercent(sql<number>`pe.lessons_total`).as('pourcentage_programme'),
      'mo.title as module',
      'l.title as lecon',
      ouiNon(sql`coalesce(pe.viewed, false)`).as('vue'),
      sql<number>`coalesce(pe.visits, 0)`.as('visites'),
      sql<number>`round(coalesce(pe.active_seconds, 0) / 60.0)::int`.as('temps_min'),
      parisDate(sql.ref('pe.last_visit_at')).as('derniere_visite_le'),
    ])
    .orderBy(sql`pe.rank`).orderBy(sql`pe.email`);
}

export const progressResource: ResourceDefinition<ProgressRow> = {
  name: 'progress',
  columns: ['apprenant', 'email', 'programme', 'programme_slug', 'pourcentage_programme', 'module', 'lecon', 'vue', 'visites', 'temps_min', 'derniere_visite_le'],
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select: (db, filter) => progressRows(db, filter, null) as never,
  selectWindow: (db, filter, window) => progressRows(db, filter, window) as never,
  async count(db, filter) {
    const result = await sql<{ n: number }>`with ${lessonBlocks(filter)} select coalesce(sum(n), 0)::int as n from placed`.execute(db);
    return result.rows[0]!.n;
  },
};
