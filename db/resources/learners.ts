import { type RawBuilder, sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { attendanceInScope } from './attendance';
import { type ListResourceDefinition, type ResourceFilter, type RowWindow, typedColumns } from './definition';
import { documentsInScope } from './documents';
import { completedBy, enrolmentsInScope } from './enrollments';
import { attemptsInScope } from './evaluations';
import { loginsInScope } from './logins';
import { yearStart } from './natural-date';
import { surveysInScope } from './satisfaction';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type LearnerRow = components['schemas']['LearnerRow'];

/**
 * The learners a request covers, in their order (email): the members of the organisation by the
 * end of the year (invited or joined by then), so that a past year keeps the learners it had
 * (docs/decisions.md#year-period).
 */
function membersInScope(db: DB, filter: ResourceFilter) {
  let query = db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .where('m.org_id', '=', filter.orgId)
    .where(sql<boolean>`least(m.invited_at, m.joined_at) < ${yearStart(filter.year + 1)}`);
  if (filter.membershipId) query = query.where('m.id', '=', filter.membershipId);
  return query.orderBy('a.email');
}

// Detail rows of the year, one learner's at a time: exactly the rows the detail resources list.
const ofMembers = (column: string) => sql<boolean>`${sql.ref(column)} in (select id from members)`;

/**
 * Minutes of activity in the year of the learner `mb`: the length of the union of the year's
 * pieces (docs/decisions.md#year-period), and of the AI-lab ones. Lesson and AI-lab intervals
 * are cut at the year's bounds; a tutoring session belongs wholly to the year it started in (as
 * its `attendance` row and connected time do). Pieces are counted between whole minutes, so the
 * parts add up exactly. In start order, a piece adds what lies beyond the latest end before it (of
 * any kind, or of its kind). One learner at a time, on their index in start order: the cost
 * follows the learners asked for. An interval lasts at most a day (a check of the table), so the
 * year's are found from a range on their start.
 */
function activityMinutes(filter: ResourceFilter) {
  const start = yearStart(filter.year);
  const end = yearStart(filter.year + 1);
  const beyond = (previousEnd: string) => sql`greatest(e - greatest(s, coalesce(${sql.ref(previousEnd)}, s)), interval '0')`;
  const minutes = (total: RawBuilder<unknown>) => sql`(coalesce(extract(epoch from ${total}), 0) / 60)::int`;
  return sql`
    select ${minutes(sql`sum(${beyond('all_end')})`)} as active,
      ${minutes(sql`sum(${beyond('lab_end')}) filter (where kind = 'labia')`)} as lab
    from (
      select kind, s, e, max(e) over w as all_end,
        max(e) filter (where kind = 'labia') over w as lab_end
      from (
        select ai.kind, date_trunc('minute', greatest(ai.started_at, ${start})) as s, date_trunc('minute', least(ai.ended_at, ${end})) as e
        from activity_intervals ai
        where ai.membership_id = mb.id and ai.kind <> 'tutorat'
          and ai.started_at >= ${start} - interval '1 day' and ai.started_at < ${end} and ai.ended_at > ${start}
        union all
        -- Tutoring whole, in the year its session started (its interval starts at most a day later).
        select ai.kind, date_trunc('minute', ai.started_at), date_trunc('minute', ai.ended_at)
        from activity_intervals ai
        left join tutoring_attendance ta on ta.id = ai.attendance_id
        left join tutoring_sessions ts on ts.id = ta.session_id
        where ai.membership_id = mb.id and ai.kind = 'tutorat'
          and ai.started_at >= ${start} - interval '1 day' and ai.started_at < ${end} + interval '1 day'
          and coalesce(ts.starts_at, ai.started_at) >= ${start} and coalesce(ts.starts_at, ai.started_at) < ${end}
      ) pieces
      where e > s
      window w as (order by s, e rows between unbounded preceding and 1 preceding)
    ) ordered`;
}

/**
 * The year's figures of each learner of the `members` CTE (learnerRows), one subquery per detail
 * resource, each built from that resource's own scope.
 */
function yearFigures(db: DB, detail: ResourceFilter) {
  const logins = loginsInScope(db, detail)
    .clearOrderBy()
    .where(ofMembers('lg.membership_id'))
    .select(['lg.membership_id', sql<number>`count(*)::int`.as('logins')])
    .groupBy('lg.membership_id');
  const enrolments = enrolmentsInScope(db, detail)
    .clearOrderBy()
    .where(ofMembers('ey.membership_id'))
    .select([
      'ey.membership_id',
      sql<number>`count(*)::int`.as('followed'),
      sql<number>`count(*) filter (where ${completedBy(detail.year)})::int`.as('completed'),
    ])
    .groupBy('ey.membership_id');
  // Course time is time on lessons: the sum of the learner's `progress.temps_min` of the year.
  const courseMinutes = db
    .selectFrom('lesson_progress_years as lpy')
    .where('lpy.year', '=', detail.year)
    .where(ofMembers('lpy.membership_id'))
    .select(['lpy.membership_id', sql<number>`sum(lpy.active_minutes)::int`.as('minutes')])
    .groupBy('lpy.membership_id');
  const attempts = attemptsInScope(db, detail)
    .clearOrderBy()
    .where(ofMembers('qa.membership_id'))
    .select([
      'qa.membership_id',
      sql<number>`count(*)::int`.as('total'),
      sql<number>`count(*) filter (where qa.passed)::int`.as('passed'),
      sql<number | null>`round(avg(qa.score) filter (where qa.passed))::int`.as('mean_score'),
    ])
    .groupBy('qa.membership_id');
  const attendance = attendanceInScope(db, detail)
    .clearOrderBy()
    .where(ofMembers('ta.membership_id'))
    .select([
      'ta.membership_id',
      sql<number>`count(*)::int`.as('sessions'),
      sql<number>`count(*) filter (where ta.present)::int`.as('present'),
      sql<number>`sum(ta.connected_minutes)::int`.as('minutes'),
    ])
    .groupBy('ta.membership_id');
  const documents = documentsInScope(db, detail)
    .clearOrderBy()
    .where(ofMembers('d.membership_id'))
    .select([
      'd.membership_id',
      sql<number>`count(*) filter (where d.type = 'PIF')::int`.as('pif'),
      sql<number>`count(*) filter (where d.type = 'Attestation')::int`.as('certificates'),
    ])
    .groupBy('d.membership_id');
  // The latest survey: the last one in the `satisfaction` order.
  const latestSurvey = surveysInScope(db, detail)
    .clearOrderBy()
    .where(ofMembers('s.membership_id'))
    .distinctOn('s.membership_id')
    .select(['s.membership_id', 's.rating', 's.nps'])
    .orderBy('s.membership_id')
    .orderBy('s.answered_at', 'desc')
    .orderBy('s.id', 'desc');
  return { logins, enrolments, courseMinutes, attempts, attendance, documents, latestSurvey };
}

function learnerRows(db: DB, filter: ResourceFilter, window: RowWindow | null) {
  let members = membersInScope(db, filter).select(['m.id', 'a.name', 'a.email', 'm.invited_at', 'm.joined_at']);
  if (window) members = members.limit(window.limit).offset(window.offset);
  // Aggregates over the members' rows only; `programme` and `updated_since` never apply here.
  const detail = { ...filter, updatedSince: null, programmeId: null };
  const { logins, enrolments, courseMinutes, attempts, attendance, documents, latestSurvey } = yearFigures(db, detail);

  return sql<LearnerRow>`(
    with members as materialized (${members})
    select mb.name as nom, mb.email,
      ${parisDate(sql`case when mb.invited_at < ${yearStart(filter.year + 1)} then mb.invited_at end`)} as invite_le,
      ${parisDate(sql`case when mb.joined_at < ${yearStart(filter.year + 1)} then mb.joined_at end`)} as inscrit_le,
      coalesce(lg.logins, 0) as connexions,
      coalesce(t.active, 0) as temps_actif_min,
      coalesce(lpy.minutes, 0) as temps_cours_min,
      coalesce(t.lab, 0) as temps_labia_min,
      coalesce(ta.minutes, 0) as temps_tutorat_min,
      coalesce(pe.followed, 0) as programmes_suivis,
      coalesce(pe.completed, 0) as programmes_completes,
      coalesce(qa.passed, 0) as evaluations_reussies,
      coalesce(qa.total, 0) as evaluations_total,
      qa.mean_score as score_moyen,
      coalesce(ta.sessions, 0) as seances_tutorat,
      coalesce(ta.present, 0) as seances_present,
      coalesce(d.pif, 0) as pif_emis,
      coalesce(d.certificates, 0) as attestations_emises,
      s.rating as satisfaction_note,
      s.nps as nps
    from members mb
    left join (${logins}) lg on lg.membership_id = mb.id
    left join lateral (${activityMinutes(detail)}) t on true
    left join (${courseMinutes}) lpy on lpy.membership_id = mb.id
    left join (${enrolments}) pe on pe.membership_id = mb.id
    left join (${attempts}) qa on qa.membership_id = mb.id
    left join (${attendance}) ta on ta.membership_id = mb.id
    left join (${documents}) d on d.membership_id = mb.id
    left join (${latestSurvey}) s on s.membership_id = mb.id
  )`;
}

/**
 * One row per learner with the year's aggregates, each computed from the rows the detail resource
 * returns for that learner and year (docs/decisions.md#figures-agree): the same scope builders are used.
 */
export const learnersResource: ListResourceDefinition<'listLearners'> = {
  operationId: 'listLearners',
  name: 'learners',
  ...typedColumns<LearnerRow>({
    nom: 'text',
    email: 'text',
    invite_le: 'date',
    inscrit_le: 'date',
    connexions: 'integer',
    temps_actif_min: 'integer',
    temps_cours_min: 'integer',
    temps_labia_min: 'integer',
    temps_tutorat_min: 'integer',
    programmes_suivis: 'integer',
    programmes_completes: 'integer',
    evaluations_reussies: 'integer',
    evaluations_total: 'integer',
    score_moyen: 'integer',
    seances_tutorat: 'integer',
    seances_present: 'integer',
    pif_emis: 'integer',
    attestations_emises: 'integer',
    satisfaction_note: 'integer',
    nps: 'integer',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: false,
  filtersByProgramme: false,
  select(db, filter) {
    return db
      .selectFrom(learnerRows(db, filter, null).as('learners'))
      .selectAll()
      .orderBy('learners.email');
  },
  keys: (db, filter) => membersInScope(db, filter).select('m.id'),
  selectWindow(db, filter, window) {
    return db
      .selectFrom(learnerRows(db, filter, window).as('learners'))
      .selectAll()
      .orderBy('learners.email');
  },
};
