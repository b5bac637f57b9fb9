import { type JoinBuilder, type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../connection';
import type { PageKey, ResourceFilter } from './definition';

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
 * The rows of `select` (which orders itself) whose `key` is one of a page's keys. The keys are a
 * value in the statement, so PostgreSQL plans for that many rows, looked up by key.
 */
export function rowsWithKeys<Row>(select: AnySelect<Row>, key: RawBuilder<unknown>, keys: readonly PageKey[]): AnySelect<Row> {
  return select.where(sql<boolean>`${key} = any(${keys})`);
}

/**
 * The join of a table (alias `joined`) on its key `joined.id` = `key`, within the organisation: its
 * rows are looked up by key, or, when PostgreSQL builds a hash of them, read from its index on the
 * organisation, never from the whole platform's.
 */
export function byKeyInOrganisation(joined: string, key: string, orgId: string) {
  return (join: JoinBuilder<any, any>) => join.onRef(`${joined}.id`, '=', key).on(`${joined}.org_id`, '=', orgId);
}

/**
 * The learner, programme, module and lesson of a row whose base table (alias `source`) carries
 * `membership_id`, `programme_id` and `lesson_id`, selected as the contract's first six columns of
 * `evaluations`, `quiz-answers` and `lesson-ratings`.
 */
export function withLessonContext(query: AnySelect, source: string, orgId: string): AnySelect {
  return query
    .innerJoin('memberships as m', byKeyInOrganisation('m', `${source}.membership_id`, orgId))
    .innerJoin('programmes as p', byKeyInOrganisation('p', `${source}.programme_id`, orgId))
    .innerJoin('lessons as l', byKeyInOrganisation('l', `${source}.lesson_id`, orgId))
    .innerJoin('modules as mo', byKeyInOrganisation('mo', 'l.module_id', orgId))
    .select([
      'm.name as apprenant',
      'm.email as email',
      'p.title as programme',
      'p.slug as programme_slug',
      'mo.title as module',
      'l.title as lecon',
    ]);
}
