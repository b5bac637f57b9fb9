import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { ouiNon, parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, type RowWindow, typedColumns } from './definition';
import { lessonsPerProgramme, progressPercent } from './enrollments';
import { yearSliceFilter, yearStart } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type ProgressRow = components['schemas']['ProgressRow'];

/*
 * `progress` of year Y: one row per learner and lesson with activity in Y (lesson_progress_years,
 * alias `lpy`): the visits and minutes of Y, the last visit in Y, and whether the lesson was viewed
 * and how far the programme had progressed by the end of Y. The order is programme slug, module,
 * lesson, email, which no index holds: the rows are counted per lesson instead (from the counts kept
 * per day and month, or one learner's own rows), which places each lesson's block in the order; a
 * page then builds only the blocks it overlaps and sorts them by email. The rules:
 * docs/decisions.md#year-period; the order: #natural-date.
 */

const yearRowScope = (filter: ResourceFilter) =>
  scopeCondition(
    { org: 'lpy.org_id', membership: 'lpy.membership_id', programme: 'lpy.programme_id' },
    yearSliceFilter(sql.ref('lpy.year'), sql.ref('lpy.last_visit_at'), filter),
    filter,
  );

/**
 * Rows per lesson in the filter's range. For the organisation (or a programme) they are summed
 * from the counts kept per month, plus per day from an `updated_since` in mid-month to the next
 * month; one learner's are counted from their own rows.
 */
function rowsPerLesson(filter: ResourceFilter): RawBuilder<unknown> {
  if (filter.membershipId) {
    return sql`select lpy.lesson_id, count(*) as n from lesson_progress_years lpy where ${yearRowScope(filter)} group by lpy.lesson_id`;
  }
  const { from, fullMonthsFrom, to } = countedPeriods(filter);
  const counts = (table: 'lesson_progress_days' | 'lesson_progress_months', start: string, end: string) => sql`
    select c.lesson_id, c.progress_rows from ${sql.table(table)} c
    where c.org_id = ${filter.orgId} ${filter.programmeId ? sql`and c.programme_id = ${filter.programmeId}` : sql``}
      and c.period >= ${start}::date and c.period < ${end}::date`;
  // biome-ignore lint/complexity/useMathMinMax: the earlier of two 'YYYY-MM-DD' strings, not numbers
  const daysTo = fullMonthsFrom < to ? fullMonthsFrom : to;
  return sql`
    select c.lesson_id, sum(c.progress_rows) as n
    from (${counts('lesson_progress_months', fullMonthsFrom, to)} union all ${counts('lesson_progress_days', from, daysTo)}) c
    group by c.lesson_id`;
}

/**
 * The filter's range as Paris days ('YYYY-MM-DD'): from the later of the year's start and
 * `updated_since`, to the next year's start; whole months from the first month start in it.
 */
export function countedPeriods(filter: Pick<ResourceFilter, 'year' | 'updatedSince'>): {
  from: string;
  fullMonthsFrom: string;
  to: string;
} {
  const yearStartDay = `${filter.year}-01-01`;
  const from = filter.updatedSince && filter.updatedSince > yearStartDay ? filter.updatedSince : yearStartDay;
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
      from lessons l
      join modules mo on mo.id = l.module_id and mo.org_id = ${filter.orgId}
      join programmes p on p.id = l.programme_id and p.org_id = ${filter.orgId}
      where l.org_id = ${filter.orgId} ${lessonScope}
    ),
    counted as (select ol.lesson_id, ol.programme_id, ol.rank, ol.lessons_total, coalesce(r.n, 0) as n
      from ordered_lessons ol left join (${rowsPerLesson(filter)}) r on r.lesson_id = ol.lesson_id),
    placed as (select *, (sum(n) over (order by rank) - n)::int as first from counted)`;
}

/** One row of a lesson block: the year row, its place in the order, and its learner. */
interface ProgressBlockRow {
  rank: number;
  first: number;
  lessons_total: number;
  membership_id: string;
  programme_id: string;
  lesson_id: string;
  visits: number;
  active_minutes: number;
  last_visit_at: Date;
  name: string | null;
  email: string;
  nth: number;
}

/**
 * The `progress` columns of year rows (alias `lpy`, with its learner's name and email and the count
 * of its programme's lessons given as `who`), and the state at the end of the year: the lesson
 * viewed by then, the programme's lessons viewed by then, each one row found on its unique key.
 */
function withProgressColumns(
  query: SelectQueryBuilder<any, any, any>,
  filter: ResourceFilter,
  who: { name: string; email: string; lessonsTotal: string },
) {
  const yearEnd = yearStart(filter.year + 1);
  return query
    .innerJoin('lessons as l', byKeyInOrganisation('l', 'lpy.lesson_id', filter.orgId))
    .innerJoin('modules as mo', byKeyInOrganisation('mo', 'l.module_id', filter.orgId))
    .innerJoin('programmes as p', byKeyInOrganisation('p', 'l.programme_id', filter.orgId))
    .leftJoin('lesson_progress as lp', (join) =>
      join
        .onRef('lp.membership_id', '=', 'lpy.membership_id')
        .onRef('lp.lesson_id', '=', 'lpy.lesson_id')
        .on('lp.org_id', '=', filter.orgId),
    )
    .leftJoin('enrolment_years as ey', (join) =>
      join
        .onRef('ey.membership_id', '=', 'lpy.membership_id')
        .onRef('ey.programme_id', '=', 'lpy.programme_id')
        .on('ey.year', '=', filter.year)
        .on('ey.org_id', '=', filter.orgId),
    )
    .select([
      sql.ref(who.name).as('apprenant'),
      sql.ref(who.email).as('email'),
      'p.title as programme',
      'p.slug as programme_slug',
      progressPercent(sql<number>`coalesce(ey.lessons_viewed, 0)`, sql.ref(who.lessonsTotal) as RawBuilder<number>).as(
        'pourcentage_programme',
      ),
      'mo.title as module',
      'l.title as lecon',
      ouiNon(sql`lp.viewed_at < ${yearEnd}`).as('vue'),
      'lpy.visits as visites',
      'lpy.active_minutes as temps_min',
      parisDate(sql.ref('lpy.last_visit_at')).as('derniere_visite_le'),
    ]);
}

/**
 * Every row of the filter, in order: the year rows with their lesson, module, programme and learner,
 * each joined on its key within the organisation (a join PostgreSQL sizes from its foreign key), and
 * sorted. The order of the lessons is programme slug, module, lesson: `rank` of the pages.
 */
function allProgressRows(db: DB, filter: ResourceFilter) {
  const rows = db
    .selectFrom('lesson_progress_years as lpy')
    .innerJoin('memberships as m', byKeyInOrganisation('m', 'lpy.membership_id', filter.orgId))
    .innerJoin(lessonsPerProgramme(db, filter.orgId), 'lc.programme_id', 'lpy.programme_id')
    .where(yearRowScope(filter));
  return withProgressColumns(rows, filter, { name: 'm.name', email: 'm.email', lessonsTotal: 'lc.lessons' })
    .orderBy('p.slug')
    .orderBy('mo.position')
    .orderBy('l.position')
    .orderBy('m.email');
}

/** The rows of the window: those of the lessons of `placed` that overlap it, numbered in each lesson by email. */
function progressWindow(db: DB, filter: ResourceFilter, window: RowWindow) {
  const rows = sql<ProgressBlockRow>`(
    with ${lessonBlocks(filter)},
    blocks as (
      select b.rank, b.first, b.lessons_total, lpy.membership_id, lpy.programme_id, lpy.lesson_id,
        lpy.visits, lpy.active_minutes, lpy.last_visit_at, m.name, m.email,
        row_number() over (partition by b.lesson_id order by m.email) as nth
      from placed b
      join lesson_progress_years lpy on lpy.lesson_id = b.lesson_id and ${yearRowScope(filter)}
      join memberships m on m.id = lpy.membership_id and m.org_id = ${filter.orgId}
      where b.n > 0 and b.first < ${window.offset + window.limit} and b.first + b.n > ${window.offset}
    )
    select r.* from blocks r
    where r.first + r.nth - 1 >= ${window.offset} and r.first + r.nth - 1 < ${window.offset + window.limit}
  )`;
  return withProgressColumns(db.selectFrom(rows.as('lpy')), filter, {
    name: 'lpy.name',
    email: 'lpy.email',
    lessonsTotal: 'lpy.lessons_total',
  })
    .orderBy('lpy.rank')
    .orderBy('lpy.email');
}

export const progressResource: ListResourceDefinition<'listProgress'> = {
  operationId: 'listProgress',
  name: 'progress',
  ...typedColumns<ProgressRow>({
    apprenant: 'text',
    email: 'text',
    programme: 'text',
    programme_slug: 'text',
    pourcentage_programme: 'integer',
    module: 'text',
    lecon: 'text',
    vue: 'text',
    visites: 'integer',
    temps_min: 'integer',
    derniere_visite_le: 'date',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select: (db, filter) => allProgressRows(db, filter) as never,
  selectWindow: (db, filter, window) => progressWindow(db, filter, window) as never,
  async count(db, filter) {
    const result = await sql<{ n: number }>`with ${lessonBlocks(filter)} select coalesce(sum(n), 0)::int as n from placed`.execute(db);
    return result.rows[0]!.n;
  },
};
