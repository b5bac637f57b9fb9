import { sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { ouiNon, parisDateTime } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { scopeCondition, windowByKeys } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type AttendanceRow = components['schemas']['AttendanceRow'];

/**
 * The attendance rows a request sees (alias `ta`, its session `ts`, the learner `m` and `a`), in
 * their order: session start, session title, the session, then email.
 */
export function attendanceInScope(db: DB, filter: ResourceFilter) {
  return (
    db
      .selectFrom('tutoring_attendance as ta')
      .innerJoin('tutoring_sessions as ts', 'ts.id', 'ta.session_id')
      .innerJoin('memberships as m', 'm.id', 'ta.membership_id')
      .innerJoin('accounts as a', 'a.id', 'm.account_id')
      // Both sides scoped, so the session index is read for this organisation only.
      .where('ts.org_id', '=', filter.orgId)
      .where(
        scopeCondition(
          { org: 'ta.org_id', membership: 'ta.membership_id', programme: 'ts.programme_id' },
          naturalTimestampFilter(sql.ref('ts.starts_at'), filter),
          filter,
        ),
      )
      .orderBy('ts.starts_at')
      .orderBy('ts.title')
      .orderBy('ts.id')
      .orderBy('a.email')
  );
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
      .leftJoin('programmes as p', 'p.id', 'ts.programme_id')
      .select([
        'a.name as apprenant',
        'a.email as email',
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
  selectWindow(db, filter, window) {
    return windowByKeys(this.select(db, filter), sql.ref('ta.id'), this.keys!(db, filter), window);
  },
};
