import { sql } from 'kysely';
import type { DB } from '../../src/database';
import { ouiNon, parisDate } from '../render';
import type { ResourceDefinition, ResourceFilter } from './definition';
import { programmeLessonCount, progressPercent } from './enrollments';
import { naturalTimestampFilter } from './natural-date';
import { scopeCondition, windowByKeys } from './scope';

export interface ProgressRow extends Record<string, unknown> {
  apprenant: string | null;
  email: string;
  programme: string;
  programme_slug: string;
  pourcentage_programme: number;
  module: string;
  lecon: string;
  vue: 'Oui' | 'Non';
  visites: number;
  temps_min: number;
  derniere_visite_le: string | null;
}

/**
 * Every lesson of every enrolment a request sees (aliases `pe`, `l`, `mo`, `p`, the learner `m`
 * and `a`, and the learner's progress `lp` when the lesson was opened), in order: programme slug,
 * module, lesson, email. The natural date is the last visit, else the enrolment.
 */
export function lessonsInScope(db: DB, filter: ResourceFilter) {
  return db.selectFrom('programme_enrolments as pe')
    .innerJoin('programmes as p', 'p.id', 'pe.programme_id')
    .innerJoin('lessons as l', 'l.programme_id', 'pe.programme_id')
    .innerJoin('modules as mo', 'mo.id', 'l.module_id')
    .innerJoin('memberships as m', 'm.id', 'pe.membership_id')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .leftJoin('lesson_progress as lp', (join) => join.onRef('lp.membership_id', '=', 'pe.membership_id').onRef('lp.lesson_id', '=', 'l.id'))
    .where(scopeCondition({ org: 'pe.org_id', membership: 'pe.membership_id', programme: 'pe.programme_id' }, naturalTimestampFilter(sql`coalesce(lp.last_visit_at, pe.enrolled_at)`, filter), filter))
    .orderBy('p.slug').orderBy('mo.position').orderBy('l.position').orderBy('a.email');
}

const rowKey = sql`(pe.id, l.id)`;

export const progressResource: ResourceDefinition<ProgressRow> = {
  name: 'progress',
  columns: ['apprenant', 'email', 'programme', 'programme_slug', 'pourcentage_programme', 'module', 'lecon', 'vue', 'visites', 'temps_min', 'derniere_visite_le'],
  filtersByYear: true,
  filtersByUpdatedSince: true,
  filtersByProgramme: true,
  select(db, filter) {
    return lessonsInScope(db, filter).select([
      'a.name as apprenant',
      'a.email as email',
      'p.title as programme',
      'p.slug as programme_slug',
      progressPercent(programmeLessonCount).as('pourcentage_programme'),
      'mo.title as module',
      'l.title as lecon',
      ouiNon(sql`coalesce(lp.viewed, false)`).as('vue'),
      sql<number>`coalesce(lp.visits, 0)`.as('visites'),
      sql<number>`round(coalesce(lp.active_seconds, 0) / 60.0)::int`.as('temps_min'),
      parisDate(sql.ref('lp.last_visit_at')).as('derniere_visite_le'),
    ]);
  },
  keys: (db, filter) => lessonsInScope(db, filter).select(['pe.id as enrolment_id', 'l.id as lesson_id']),
  selectWindow(db, filter, window) {
    return windowByKeys(this.select(db, filter), rowKey, this.keys!(db, filter), window);
  },
};
