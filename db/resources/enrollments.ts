import { type RawBuilder, sql } from 'kysely';
import type { components } from '../../codegen/openapi';
import type { DB } from '../connection';
import { ouiNon, parisDate, parisDateTime } from '../render';
import { type ListResourceDefinition, type ResourceFilter, typedColumns } from './definition';
import { yearSliceFilter, yearStart } from './natural-date';
import { byKeyInOrganisation, scopeCondition } from './scope';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type EnrollmentRow = components['schemas']['EnrollmentRow'];

/*
 * `enrollments` of year Y: one row per enrolment active in Y (enrolled in Y, or with lesson time,
 * a quiz attempt, a tutoring session or a document of the programme in Y), as it stood at the end
 * of Y (now, for the current year). The year slices are kept in enrolment_years (alias `ey`).
 * The rules: docs/decisions.md#year-period and #programme-followed.
 */

/** The lessons of each programme of the organisation (alias `lc`: `programme_id`, `lessons`), counted once per statement. */
export function lessonsPerProgramme(db: DB, orgId: string) {
  return db
    .selectFrom('lessons as l')
    .select(['l.programme_id', sql<number>`count(*)::int`.as('lessons')])
    .where('l.org_id', '=', orgId)
    .groupBy('l.programme_id')
    .as('lc');
}

/** Progress (%): lessons viewed over lessons, rounded down so that 100 means all. */
export function progressPercent(lessonsViewed: RawBuilder<number>, lessonsTotal: RawBuilder<number>): RawBuilder<number> {
  return sql<number>`case when ${lessonsTotal} = 0 then 0 else (100 * ${lessonsViewed} / ${lessonsTotal})::int end`;
}

/** The enrolment years a request sees (alias `ey`), in order: natural date, then the enrolment. */
export function enrolmentsInScope(db: DB, filter: ResourceFilter) {
  return db
    .selectFrom('enrolment_years as ey')
    .where(
      scopeCondition(
        { org: 'ey.org_id', membership: 'ey.membership_id', programme: 'ey.programme_id' },
        yearSliceFilter(sql.ref('ey.year'), sql.ref('ey.natural_at'), filter),
        filter,
      ),
    )
    .orderBy('ey.natural_at')
    .orderBy('ey.enrolment_id');
}

export const enrollmentsResource: ListResourceDefinition<'listEnrollments'> = {
  operationId: 'listEnrollments',
  name: 'enrollments',
  ...typedColumns<EnrollmentRow>({
    apprenant: 'text',
    email: 'text',
    programme: 'text',
    programme_slug: 'text',
    pourcentage: 'integer',
    lecons_vues: 'integer',
    lecons_total: 'integer',
    complete: 'text',
    complete_le: 'date',
    derniere_activite_le: 'date',
    premiere_connexion_le: 'dateTime',
    derniere_connexion_le: 'dateTime',
  }),
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    const yearEnd = yearStart(filter.year + 1);
    const lessonsTotal = sql<number>`coalesce(lc.lessons, 0)`;
    return (
      enrolmentsInScope(db, filter)
        .innerJoin('programme_enrolments as pe', byKeyInOrganisation('pe', 'ey.enrolment_id', filter.orgId))
        .innerJoin('memberships as m', byKeyInOrganisation('m', 'ey.membership_id', filter.orgId))
        .innerJoin('programmes as p', byKeyInOrganisation('p', 'ey.programme_id', filter.orgId))
        .leftJoin(lessonsPerProgramme(db, filter.orgId), 'lc.programme_id', 'ey.programme_id')
        // The certificate counts from its issue: one issued after the end of the year is not there yet.
        .leftJoin('documents as cert', (join) =>
          join
            .onRef('cert.membership_id', '=', 'ey.membership_id')
            .onRef('cert.programme_id', '=', 'ey.programme_id')
            .on('cert.org_id', '=', filter.orgId)
            .on('cert.type', '=', 'Attestation')
            .on('cert.issued_at', '<', yearEnd),
        )
        .select([
          'm.name as apprenant',
          'm.email as email',
          'p.title as programme',
          'p.slug as programme_slug',
          progressPercent(sql<number>`ey.lessons_viewed`, lessonsTotal).as('pourcentage'),
          'ey.lessons_viewed as lecons_vues',
          lessonsTotal.as('lecons_total'),
          ouiNon(sql`cert.id is not null`).as('complete'),
          parisDate(sql.ref('cert.issued_at')).as('complete_le'),
          parisDate(sql.ref('ey.last_activity_at')).as('derniere_activite_le'),
          // The first launch ever, once it has happened by the end of the year.
          parisDateTime(sql`case when pe.first_visit_at < ${yearEnd} then pe.first_visit_at end`).as('premiere_connexion_le'),
          parisDateTime(sql.ref('ey.last_visit_at')).as('derniere_connexion_le'),
        ])
    );
  },
  keys: (db, filter) => enrolmentsInScope(db, filter).select('ey.enrolment_id'),
  pageKey: 'ey.enrolment_id',
};
