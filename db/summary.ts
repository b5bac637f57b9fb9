import { sql } from 'kysely';
import type { components } from '../codegen/openapi';
import type { DB } from './connection';

/** The `data` of the `summary` resource, as the contract defines it. */
export type Summary = components['schemas']['SummaryData'];

/**
 * The organisation's counts, from the same rows as `users`: learners and their statuses, and the
 * licences by status. A revoked licence frees nothing, so it counts as used: total = available + used.
 * For one learner (membershipId), the counts of that learner and the licences they hold.
 */
export async function getSummary(db: DB, orgId: string, membershipId: string | null): Promise<Summary> {
  const learners = db
    .selectFrom('memberships')
    .select([sql<number>`count(*)::int`.as('total'), sql<number>`(count(*) filter (where status = 'actif'))::int`.as('actifs')])
    .where('org_id', '=', orgId)
    .$if(membershipId !== null, (q) => q.where('id', '=', membershipId!));
  const licences = db
    .selectFrom('licences')
    .select([
      'type',
      sql<number>`count(*)::int`.as('total'),
      sql<number>`(count(*) filter (where status = 'disponible'))::int`.as('disponibles'),
      sql<number>`(count(*) filter (where status <> 'disponible'))::int`.as('utilisees'),
    ])
    .where('org_id', '=', orgId)
    .$if(membershipId !== null, (q) => q.where('membership_id', '=', membershipId!))
    .groupBy('type');
  const [people, licenceRows] = await Promise.all([learners.executeTakeFirstOrThrow(), licences.execute()]);
  const byType = (type: 'standard' | 'tutorat') => {
    const row = licenceRows.find((r) => r.type === type);
    return { total: row?.total ?? 0, disponibles: row?.disponibles ?? 0, utilisees: row?.utilisees ?? 0 };
  };
  return { utilisateurs: people, licences: { standard: byType('standard'), tutorat: byType('tutorat') } };
}
