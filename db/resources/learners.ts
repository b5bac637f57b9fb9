import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { parisDate } from '../render';
import { type ListResourceDefinition, type ResourceFilter, type RowWindow, typedColumns } from './definition';
import { yearStart } from './natural-date';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type LearnerRow = components['schemas']['LearnerRow'];

/**
 * The learners a request covers, in their order (email): the members of the organisation by the
 * end of the year (invited or joined by then), so that a past year keeps the learners it had
 * (docs/decisions.md#year-period). One index holds them in that order, with what the rows show of
 * them (memberships_org_email_idx).
 */
function membersInScope(db: DB, filter: ResourceFilter) {
  let query = db
    .selectFrom('memberships as m')
    .where('m.org_id', '=', filter.orgId)
    .where(sql<boolean>`least(m.invited_at, m.joined_at) < ${yearStart(filter.year + 1)}`);
  if (filter.membershipId) query = query.where('m.id', '=', filter.membershipId);
  return query.orderBy('m.email');
}

/**
 * The learners with their figures of the year, kept per learner and year by triggers from the rows
 * the detail resources list (learner_years, see its migration): one row read per learner, so a page
 * costs its learners, whatever the organisation holds. A learner without a row that year had no
 * activity: zeros, and no score or survey.
 */
function learnerRows(db: DB, filter: ResourceFilter, window: RowWindow | null) {
  let members = membersInScope(db, filter).select(['m.id', 'm.name', 'm.email', 'm.invited_at', 'm.joined_at']);
  if (window) members = members.limit(window.limit).offset(window.offset);
  const yearEnd = yearStart(filter.year + 1);
  return sql<LearnerRow>`(
    with members as materialized (${members})
    select mb.name as nom, mb.email,
      ${parisDate(sql`case when mb.invited_at < ${yearEnd} then mb.invited_at end`)} as invite_le,
      ${parisDate(sql`case when mb.joined_at < ${yearEnd} then mb.joined_at end`)} as inscrit_le,
      coalesce(ly.logins, 0) as connexions,
      coalesce(ly.active_minutes, 0) as temps_actif_min,
      coalesce(ly.course_minutes, 0) as temps_cours_min,
      coalesce(ly.lab_minutes, 0) as temps_labia_min,
      coalesce(ly.tutoring_minutes, 0) as temps_tutorat_min,
      coalesce(ly.programmes_followed, 0) as programmes_suivis,
      coalesce(ly.programmes_completed, 0) as programmes_completes,
      coalesce(ly.evaluations_passed, 0) as evaluations_reussies,
      coalesce(ly.evaluations_total, 0) as evaluations_total,
      ly.mean_score as score_moyen,
      coalesce(ly.tutoring_sessions, 0) as seances_tutorat,
      coalesce(ly.sessions_present, 0) as seances_present,
      coalesce(ly.pif_issued, 0) as pif_emis,
      coalesce(ly.certificates_issued, 0) as attestations_emises,
      ly.satisfaction_rating as satisfaction_note,
      ly.satisfaction_nps as nps
    from members mb
    left join learner_years ly on ly.membership_id = mb.id and ly.year = ${filter.year} and ly.org_id = ${filter.orgId}
  )`;
}

/**
 * One row per learner with the year's aggregates, each that of the rows the detail resource returns
 * for that learner and year (docs/decisions.md#figures-agree, tests/learning.figures.test.ts).
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
