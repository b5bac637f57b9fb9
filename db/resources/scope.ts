import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../connection';
import type { ResourceFilter, RowWindow } from './definition';

/** Where a resource's base table keeps its organisation, learner and (if any) programme. */
export interface ScopeColumns {
  org: string;
  membership: string;
  programme?: string;
}

/**
 * The rows a request may see: the caller's organisation, the learner and programme filters, and
 * the natural-date condition (`year`, `updated_since`). One builder for a resource and for the
 * `learners` aggregates that must agree with it.
 */
export function scopeCondition(columns: ScopeColumns, natural: RawBuilder<boolean>, filter: ResourceFilter): RawBuilder<boolean> {
  const conditions = [sql`${sql.ref(columns.org)} = ${filter.orgId}`, natural];
  if (filter.membershipId) conditions.push(sql`${sql.ref(columns.membership)} = ${filter.membershipId}`);
  if (filter.programmeId && columns.programme) conditions.push(sql`${sql.ref(columns.programme)} = ${filter.programmeId}`);
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}

type AnySelect<Row = any> = SelectQueryBuilder<Database, any, Row>;

/**
 * A window of `select` that builds only the window's rows: the window is taken on the cheap ordered
 * keys, and `select` (which orders itself) is restricted to them. `= any(array(...))` makes the
 * keys one value computed first, so the planner looks the rows up by key instead of joining all.
 */
export function windowByKeys<Row>(select: AnySelect<Row>, key: RawBuilder<unknown>, keys: AnySelect, window: RowWindow): AnySelect<Row> {
  return select.where(sql<boolean>`${key} = any(array(${keys.limit(window.limit).offset(window.offset)}))`);
}

/**
 * The learner, programme, module and lesson of a row whose base table (alias `source`) carries
 * `membership_id`, `programme_id` and `lesson_id`, selected as the contract's first six columns of
 * `evaluations`, `quiz-answers` and `lesson-ratings`.
 */
export function withLessonContext(query: AnySelect, source: string): AnySelect {
  return query
    .innerJoin('memberships as m', 'm.id', sql.ref(`${source}.membership_id`) as never)
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .innerJoin('programmes as p', 'p.id', sql.ref(`${source}.programme_id`) as never)
    .innerJoin('lessons as l', 'l.id', sql.ref(`${source}.lesson_id`) as never)
    .innerJoin('modules as mo', 'mo.id', 'l.module_id')
    .select([
      'a.name as apprenant',
      'a.email as email',
      'p.title as programme',
      'p.slug as programme_slug',
      'mo.title as module',
      'l.title as lecon',
    ]);
}
