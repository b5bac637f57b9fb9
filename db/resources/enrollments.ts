import { type RawBuilder, sql } from 'kysely';
import type { DB } from '../../src/database';
import { ouiNon, parisDate, parisDateTime } from '../render';
import type { ResourceDefinition, ResourceFilter } from './definition';
import { naturalTimestampFilter } from './natural-date';
import { scopeCondition, windowByKeys } from './scope';
import type { components } from '../../codegen/openapi';

/** A row as the contract defines it (generated from openapi.yaml): columns are checked against it. */
export type EnrollmentRow = components['schemas']['EnrollmentRow'];

/** Natural date of an enrolment (alias `pe`): its last lesson visit, else the enrolment. Indexed. */
export const enrolmentNaturalDate = sql<Date>`coalesce(pe.last_visit_at, pe.enrolled_at)`;

/** Lessons of the enrolment's programme. */
export const programmeLessonCount = sql<number>`(select count(*)::int from lessons lc where lc.programme_id = pe.programme_id)`;

/** Progress (%) of an enrolment: lessons viewed over lessons, rounded down so 100 means all. */
export function progressPercent(lessonsTotal: RawBuilder<number>): RawBuilder<number> {
  return sql<number>`case when ${lessonsTotal} = 0 then 0 else (100 * pe.lessons_viewed / ${lessonsTotal})::int end`;
}

/**
 * An enrolment is complete when its end certificate is issued (the generator and the write paths
 * issue it when the last lesson is viewed); `complete_le` is that issue date.
 */
export const isCompleteCondition = sql<boolean>`exists (select 1 from documents c
  where c.membership_id = pe.membership_id and c.programme_id = pe.programme_id and c.type = 'Attestation')`;

/** The enrolments a request sees (alias `pe`), in order: natural date, then the enrolment. */
export function enrolmentsInScope(db: DB, filter: ResourceFilter) {
  return db.selectFrom('programme_enrolments as pe')
    .where(scopeCondition({ org: 'pe.org_id', membership: 'pe.membership_id', programme: 'pe.programme_id' }, naturalTimestampFilter(enrolmentNaturalDate, filter), filter))
    .orderBy(enrolmentNaturalDate).orderBy('pe.id');
}

export const enrollmentsResource: ResourceDefinition<EnrollmentRow> = {
  name: 'enrollments',
  columns: ['apprenant', 'email', 'programme', 'programme_slug', 'pourcentage', 'lecons_vues', 'lecons_total', 'complete', 'complete_le', 'derniere_activite_le', 'premiere_connexion_le', 'derniere_connexion_le'],
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return enrolmentsInScope(db, filter)
      .innerJoin('memberships as m', 'm.id', 'pe.membership_id')
      .innerJoin('accounts as a', 'a.id', 'm.account_id')
      .innerJoin('programmes as p', 'p.id', 'pe.programme_id')
      .leftJoin('documents as cert', (join) => join
        .onRef('cert.membership_id', '=', 'pe.membership_id')
        .onRef('cert.programme_id', '=', 'pe.programme_id')
        .on('cert.type', '=', 'Attestation'))
      .select([
        'a.name as apprenant',
        'a.email as email',
        'p.title as programme',
        'p.slug as programme_slug',
        progressPercent(programmeLessonCount).as('pourcentage'),
        'pe.lessons_viewed as lecons_vues',
        programmeLessonCount.as('lecons_total'),
        ouiNon(sql`cert.id is not null`).as('complete'),
        parisDate(sql.ref('cert.issued_at')).as('complete_le'),
        parisDate(sql.ref('pe.last_visit_at')).as('derniere_activite_le'),
        parisDateTime(sql.ref('pe.first_visit_at')).as('premiere_connexion_le'),
        parisDateTime(sql.ref('pe.last_visit_at')).as('derniere_connexion_le'),
      ]);
  },
  keys: (db, filter) => enrolmentsInScope(db, filter).select('pe.id'),
  selectWindow(db, filter, window) {
    return windowByKeys(this.select(db, filter), sql.ref('pe.id'), this.keys!(db, filter), window);
  },
};
