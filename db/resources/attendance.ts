import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { ouiNon, parisDateTime } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type AttendanceRow = components['schemas']['AttendanceRow'];

/**
 * The attendance rows a request sees (alias `ta`), in their order: session start, session title, the
 * session, then email. Each row carries its session's start, title and programme and its learner's
 * email (copied by triggers), so that this is one index (tutoring_attendance_org_order_idx).
 */
export function attendanceInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('tutoring_attendance as ta')
    .where(
      scopeCondition(
        { org: 'ta.org_id', membership: 'ta.membership_id', programme: 'ta.session_programme_id' },
        naturalTimestampFilter(sql.ref('ta.session_starts_at'), filter),
        filter,
      ),
    )
    .orderBy('ta.session_starts_at')
    .orderBy('ta.session_title')
    .orderBy('ta.session_id')
    .orderBy('ta.email');
}

export const attendanceResource: ListResourceDefinition<'listAttendance'> = {
  operationId: 'listAttendance',
  name: 'attendance',
  ...typedColumns<AttendanceRow>({
    apprenant: 'text',
    email: 'text',
    seance: 'text',
    programme: 'text',
    programme_slug: 'text',
    date: 'dateTime',
    duree_prevue_min: 'integer',
    present: 'text',
    temps_connecte_min: 'integer',
    signe_apprenant: 'text',
    signe_formateur: 'text',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return attendanceInScope(db, filter)
      .innerJoin('tutoring_sessions as ts', byKeyInOrganisation('ts', 'ta.session_id', filter.orgId))
      .innerJoin('memberships as m', byKeyInOrganisation('m', 'ta.membership_id', filter.orgId))
      .leftJoin('programmes as p', byKeyInOrganisation('p', 'ta.session_programme_id', filter.orgId))
      .select([
        'm.name as apprenant',
        'ta.email as email',
        'ts.title as seance',
        'p.title as programme',
        'p.slug as programme_slug',
        parisDateTime(sql.ref('ts.starts_at')).as('date'),
        'ts.planned_minutes as duree_prevue_min',
        ouiNon(sql.ref('ta.present')).as('present'),
        'ta.connected_minutes as temps_connecte_min',
        ouiNon(sql.ref('ta.signed_by_learner')).as('signe_apprenant'),
        ouiNon(sql.ref('ta.signed_by_trainer')).as('signe_formateur'),
      ]);
  },
  keys: (db, filter) => attendanceInScope(db, filter).select('ta.id'),
  pageKey: 'ta.id',
};
