import { sql } from 'kysely';
import type { DB } from '../src/database';

/** Everything an enrolment may write, counted: a refused request must leave it unchanged. */
export async function writtenState(db: DB, orgId: string) {
  const { rows: [counts] } = await sql<Record<string, number>>`
    select
      (select count(*)::int from accounts) as accounts,
      (select count(*)::int from memberships where org_id = ${orgId}) as memberships,
      (select count(*)::int from licences where org_id = ${orgId} and status = 'disponible') as licences_disponibles,
      (select count(*)::int from licences where org_id = ${orgId} and status = 'attribuée') as licences_attribuees,
      (select count(*)::int from programme_enrolments where org_id = ${orgId}) as programme_enrolments,
      (select count(*)::int from events where org_id = ${orgId}) as events`.execute(db);
  return counts!;
}

/**
 * The invariants no interleaving may break: every learner of the organisation holds exactly one
 * live licence, every live licence belongs to one of its learners, one `learner.enrolled` event per
 * learner, and no account was left behind without a membership by a failed enrolment.
 */
export async function licenceInvariants(db: DB, orgId: string, emails: string[]) {
  const { rows: [row] } = await sql<Record<string, number>>`
    select
      (select count(*)::int from memberships m where m.org_id = ${orgId}
        and (select count(*) from licences l where l.membership_id = m.id and l.status in ('attribuée', 'activée')) <> 1) as members_without_one_licence,
      (select count(*)::int from licences l where l.org_id = ${orgId} and l.status in ('attribuée', 'activée')
        and not exists (select 1 from memberships m where m.id = l.membership_id and m.org_id = ${orgId})) as stray_licences,
      (select count(*)::int from memberships where org_id = ${orgId}) as members,
      (select count(*)::int from licences where org_id = ${orgId} and status = 'attribuée') as licences_attribuees,
      (select count(*)::int from events where org_id = ${orgId} and type = 'learner.enrolled') as enrolled_events,
      (select count(*)::int from accounts a where a.email = any(${emails}::text[])
        and not exists (select 1 from memberships m where m.account_id = a.id)) as orphan_accounts`.execute(db);
  return row!;
}

export const learnerEmails = (prefix: string, count: number, domain = 'exemple.fr') =>
  Array.from({ length: count }, (_, index) => `${prefix}${String(index).padStart(3, '0')}@${domain}`);
